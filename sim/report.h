/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The simulation report's cases (sim/report*.cc): each builds a fabric, runs one workload
 * through ns-3 to its end and returns what it measured. `make sim-report` runs them all
 * (report.cc) and writes build/sim-report.json, from which docs/SIMULATION.md and its plots are
 * drawn.
 */
#ifndef METAROCE_SIM_REPORT_H
#define METAROCE_SIM_REPORT_H

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "fabric.h"

namespace metaroce_sim {

/* The three ways a fabric carries RDMA that the seed sets side by side. */
enum class Baseline { MetaRoCE, RoCEv2Pfc, RoCEv2Lossy };
const char *BaselineName(Baseline b);
/* The description's transport and PFC for b. */
void ApplyBaseline(FabricSpec &spec, Baseline b);

enum class Workload { RingAllReduce, AllToAll };
const char *WorkloadName(Workload w);

struct CollectiveResult {
	bool finished = false, right = false; /* within the run's bound; every byte checked */
	double completion_us = 0;
	double goodput_share = 0; /* each host's bytes over the time, of its planes' line rate */
	unsigned qps_errored = 0;
	/* over_headroom: bytes a PFC ingress held past xoff and headroom, which a switch with
	 * a finite buffer would have dropped (PFC's queues themselves never drop) */
	uint64_t retransmits = 0, ce = 0, switch_drops = 0, pauses = 0, over_headroom = 0;
	double wall_s = 0;
	uint64_t events = 0;
};

/* A collective over every host of the fabric spec describes; bytes: the all-reduce's buffer
 * or the all-to-all's block. fail_plane >= 0: that plane goes dark at fail_at. */
CollectiveResult RunCollective(const FabricSpec &spec, Workload w, uint32_t bytes,
			       int fail_plane = -1, ns3::Time fail_at = ns3::Time());

struct IncastResult {
	double converge_rtts = -1; /* -1: not within the run */
	unsigned window_rtts = 0;  /* the fairness window */
	double peak_queue_packets = 0;
	double victim_kept = 0;	   /* the victim's goodput beside the incast, over alone */
	bool finished = false;
	unsigned qps_errored = 0;
	uint64_t switch_drops = 0, pauses = 0, over_headroom = 0;
};

/* n senders WRITE `bytes` each into one receiver at once, a victim flow between two other
 * hosts beside them; spec's hosts are set here. */
IncastResult RunIncast(FabricSpec spec, unsigned n, uint64_t bytes);

struct FailoverResult {
	double failover_us = -1, failover_rtts = -1; /* -1: never recovered within the run */
	double before_gbps = 0, after_gbps = 0;	     /* aggregate, before and after the failure */
	unsigned qps_errored = 0, wrs_failed = 0;
	std::vector<std::pair<double, double>> series; /* (us, Gbit/s over the RTT before) */
};

/* Long-lived flows (a permutation) over every plane; the last plane dark at `at`: how long
 * until the rest carry the load again: the end of the last 8-RTT window after the failure
 * whose goodput is under 90% of the surviving planes' share of the rate before. */
FailoverResult RunFailover(const FabricSpec &spec, ns3::Time at, ns3::Time end);

struct ThroughputResult {
	unsigned qps = 0; /* QP pairs */
	double gbps = 0;  /* aggregate goodput over the run's second half */
	unsigned qps_errored = 0;
	uint64_t retransmits = 0, switch_drops = 0;
	double wall_s = 0;
};

/* Every host WRITEs without end to `peers` others (h + 1 .. h + peers), for `run`: what the
 * fabric carries once the flows have settled. */
ThroughputResult RunThroughput(const FabricSpec &spec, unsigned peers, ns3::Time run);

struct ScaleResult {
	unsigned hosts = 0, qps = 0;
	bool finished = false;
	double completion_us = 0, wall_s = 0, events_per_s = 0;
	uint64_t events = 0;
	double bytes_per_qp = 0;    /* heap the engine and the host take per QP */
	size_t engine_bytes_per_qp = 0; /* of which the engine's state (mrc_conn_footprint) */
	size_t rss_kib = 0; /* the process's peak resident memory, when the run comes first */
};

/* A permutation of `bytes` WRITEs over spec's hosts: what simulating that many costs. */
ScaleResult RunScale(const FabricSpec &spec, uint64_t bytes);

} // namespace metaroce_sim

#endif
