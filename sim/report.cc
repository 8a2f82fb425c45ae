/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * metaroce-sim-report: the seed's four claims at its scale, in ns-3, side by side with the
 * RoCEv2 baselines (report.h's cases, the engine unchanged inside every host). Writes the
 * figures as JSON (`make sim-report`: build/sim-report.json, whose keys docs/SIMULATION.md
 * defines) and, in DATA_DIR, one whitespace-separated table a plot, for gnuplot. --quick runs
 * every case small, to see that the report works (make sim-check), not what it says.
 *
 *	metaroce-sim-report OUT.json DATA_DIR [--quick]
 */
#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include <sys/resource.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "report.h"

using namespace metaroce_sim;

namespace {

struct Scale {
	unsigned hosts, leaves, spines, planes; /* the collectives' fabric */
	uint32_t all_reduce, block;		/* each host's all-reduce buffer, a2a block */
	std::vector<unsigned> incasts;
	uint64_t incast_total;			/* bytes all senders of an incast move */
	unsigned scale_hosts;
	uint64_t scale_bytes;
	double failover_at_us, failover_end_us;
	unsigned scaling_peers;	/* plane scaling: each host's flows */
	double scaling_us;
	unsigned loss_hosts;	/* long-lived flows under loss: hosts, every one to every other */
	double loss_us;		/* long enough for RTOs and their backoff to show */
};

const Scale FULL = { 64, 8, 8, 4, 8u << 20, 32u << 10, { 16, 64, 256 }, 36u << 20, 1024,
		     1u << 20, 200, 600, 63, 200, 16, 1000 };
const Scale QUICK = { 16, 4, 4, 2, 256u << 10, 8u << 10, { 4, 8 }, 2u << 20, 64, 128u << 10,
		      50, 300, 15, 50, 8, 200 };

FabricSpec BaseSpec(const Scale &sc)
{
	FabricSpec s;

	s.hosts = sc.hosts;
	s.planes = sc.planes;
	s.leaves = sc.leaves;
	s.spines = sc.spines;
	s.rate = "100Gbps";
	s.delay = "1us";
	s.mtu = 4200; /* a 4 KiB payload, the engine's */
	s.ecn_k = 20;
	s.buffer = 200;
	s.mem_bytes = 3 * (size_t)sc.all_reduce > 2 * (size_t)sc.hosts * sc.block
			      ? 3 * (size_t)sc.all_reduce
			      : 2 * (size_t)sc.hosts * sc.block;
	return s;
}

/* The JSON, written as the cases finish (each line a key of the one object). */
struct Out {
	FILE *json;
	std::string data_dir;
	bool first = true;

	void Key(const char *k, const std::string &raw)
	{
		fprintf(json, "%s\n  \"%s\": %s", first ? "{" : ",", k, raw.c_str());
		first = false;
		fflush(json);
	}
	FILE *Data(const char *name)
	{
		FILE *d = fopen((data_dir + "/" + name).c_str(), "w");

		if (!d) {
			perror(name);
			exit(1);
		}
		return d;
	}
};

std::string Num(double v)
{
	char b[32];

	snprintf(b, sizeof(b), "%.4g", v);
	return b;
}

std::string CollectiveJson(const CollectiveResult &r)
{
	char b[512];

	snprintf(b, sizeof(b),
		 "{\"finished\": %s, \"right\": %s, \"completion_us\": %.1f, "
		 "\"goodput_share\": %.4f, \"qps_errored\": %u, \"retransmits\": %llu, "
		 "\"ce\": %llu, \"switch_drops\": %llu, \"pauses\": %llu, "
		 "\"over_headroom\": %llu, \"events\": %llu, \"wall_s\": %.1f}",
		 r.finished ? "true" : "false", r.right ? "true" : "false", r.completion_us,
		 r.goodput_share, r.qps_errored, (unsigned long long)r.retransmits,
		 (unsigned long long)r.ce, (unsigned long long)r.switch_drops,
		 (unsigned long long)r.pauses, (unsigned long long)r.over_headroom,
		 (unsigned long long)r.events, r.wall_s);
	return b;
}

void Say(const char *what, const CollectiveResult &r)
{
	fprintf(stderr, "  %-44s %s %9.1f us  goodput %5.1f%%  resent %llu  drops %llu  "
			"pauses %llu  errored %u  (%.1f s)\n",
		what, r.right ? "right" : (r.finished ? "WRONG" : "UNFINISHED"), r.completion_us,
		100 * r.goodput_share, (unsigned long long)r.retransmits,
		(unsigned long long)r.switch_drops, (unsigned long long)r.pauses, r.qps_errored,
		r.wall_s);
}

const Baseline BASELINES[] = { Baseline::MetaRoCE, Baseline::RoCEv2Pfc, Baseline::RoCEv2Lossy };
const Workload WORKLOADS[] = { Workload::RingAllReduce, Workload::AllToAll };
const double LOSSES[] = { 0, 0.001, 0.01, 0.1 };

uint32_t Bytes(const Scale &sc, Workload w)
{
	return w == Workload::RingAllReduce ? sc.all_reduce : sc.block;
}

/* Every workload, baseline and loss rate on one fabric; the completion times by key. */
std::string Matrix(const Scale &sc, FabricSpec spec, const char *name, const double *losses,
		   size_t n_losses, FILE *data, std::map<std::string, CollectiveResult> *keep)
{
	std::string json = "{";

	for (Workload w : WORKLOADS)
		for (Baseline b : BASELINES)
			for (size_t i = 0; i < n_losses; i++) {
				char key[96];

				ApplyBaseline(spec, b);
				spec.host_loss = losses[i];
				CollectiveResult r = RunCollective(spec, w, Bytes(sc, w));

				snprintf(key, sizeof(key), "%s/%s/%g", WorkloadName(w),
					 BaselineName(b), losses[i]);
				Say((std::string(name) + " " + key).c_str(), r);
				json += std::string(json.size() > 1 ? ", " : "") + "\"" + key +
					"\": " + CollectiveJson(r);
				if (data)
					fprintf(data, "%s %s %g %.1f %.4f\n", WorkloadName(w),
						BaselineName(b), losses[i] * 100,
						r.finished ? r.completion_us : -1, r.goodput_share);
				if (keep)
					(*keep)[key] = r;
			}
	return json + "}";
}

/* 1. collectives under random loss, MetaRoCE and both RoCEv2 baselines */
void Collectives(Out &out, const Scale &sc, const FabricSpec &spec,
		 std::map<std::string, CollectiveResult> *runs)
{
	fprintf(stderr, "collectives, %u hosts, %u planes:\n", sc.hosts, sc.planes);
	FILE *d = out.Data("loss.dat");

	out.Key("collectives", Matrix(sc, spec, "leaf-spine", LOSSES, 4, d, runs));
	fclose(d);
	/* the time at 0% over the time at the loss: both runs finished with every byte right */
	auto kept = [&](const char *w, double loss) {
		const CollectiveResult &a = (*runs)[std::string(w) + "/metaroce/0"];
		const CollectiveResult &b = (*runs)[std::string(w) + "/metaroce/" + Num(loss)];

		return a.right && b.right ? a.completion_us / b.completion_us : 0;
	};
	out.Key("kept_1pct", Num(kept("all_reduce", 0.01)));
	out.Key("kept_10pct", Num(kept("all_reduce", 0.1)));
	out.Key("kept_all_to_all", "{\"1pct\": " + Num(kept("all_to_all", 0.01)) +
					   ", \"10pct\": " + Num(kept("all_to_all", 0.1)) + "}");
}

/* 2. planes: the same flows, every host to `scaling_peers` others, over 1, 2, 4, 8 */
void Planes(Out &out, const Scale &sc, const FabricSpec &spec)
{
	std::string scaling = "{", goodput = "{";
	FILE *d = out.Data("planes.dat");
	double one = 0;

	fprintf(stderr, "plane scaling (%u QPs):\n", sc.hosts * sc.scaling_peers);
	for (unsigned p : { 1u, 2u, 4u, 8u }) {
		FabricSpec s = spec;

		s.planes = p;
		ThroughputResult r = RunThroughput(s, sc.scaling_peers,
						   ns3::MicroSeconds(sc.scaling_us));

		fprintf(stderr, "  planes %u: %.0f Gbit/s of %.0f (%u QPs, resent %llu, drops "
				"%llu, errored %u) (%.1f s)\n", p, r.gbps, 100.0 * p * sc.hosts,
			r.qps, (unsigned long long)r.retransmits,
			(unsigned long long)r.switch_drops, r.qps_errored, r.wall_s);
		if (p == 1)
			one = r.gbps;
		scaling += std::string(p > 1 ? ", " : "") + "\"" + std::to_string(p) +
			   "\": " + Num(one > 0 ? r.gbps / one : 0);
		goodput += std::string(p > 1 ? ", " : "") + "\"" + std::to_string(p) +
			   "\": " + Num(r.gbps);
		fprintf(d, "%u %.1f %.4f\n", p, r.gbps, one > 0 ? r.gbps / one : 0);
	}
	fclose(d);
	out.Key("plane_scaling", scaling + "}");
	out.Key("plane_scaling_qps", std::to_string(sc.hosts * sc.scaling_peers));
	out.Key("plane_goodput_gbps", goodput + "}");
}

/* 2b. long-lived flows under loss, every host to every other, MetaRoCE and the lossy
 * baseline: fewer hosts than the collectives' for a run long enough that the first RTOs (no
 * RTT sample yet) and their backoff are not the whole measurement */
void FlowsUnderLoss(Out &out, const Scale &sc, const FabricSpec &spec)
{
	std::string kept = "{";
	const unsigned n = sc.loss_hosts;

	fprintf(stderr, "long-lived flows under loss (%u hosts, %u QPs, %.0f us):\n", n,
		n * (n - 1), sc.loss_us);
	for (Baseline b : { Baseline::MetaRoCE, Baseline::RoCEv2Lossy }) {
		double at0 = 0;

		kept += std::string(kept.size() > 1 ? ", " : "") + "\"" + BaselineName(b) + "\": {";
		for (double loss : LOSSES) {
			FabricSpec s = spec;

			s.hosts = n;
			s.leaves = n / 8;
			ApplyBaseline(s, b);
			s.host_loss = loss;
			ThroughputResult r = RunThroughput(s, n - 1, ns3::MicroSeconds(sc.loss_us));

			if (!loss)
				at0 = r.gbps;
			fprintf(stderr, "  %-12s %4g%%: %.0f Gbit/s (%.1f%% kept), resent %llu, "
					"errored %u (%.1f s)\n",
				BaselineName(b), loss * 100, r.gbps,
				at0 > 0 ? 100 * r.gbps / at0 : 0,
				(unsigned long long)r.retransmits, r.qps_errored, r.wall_s);
			kept += std::string(loss ? ", " : "") + "\"" + Num(loss) +
				"\": " + Num(at0 > 0 ? r.gbps / at0 : 0);
		}
		kept += "}";
	}
	out.Key("flows_kept", kept + "}");
	out.Key("flows_kept_fabric", "{\"hosts\": " + std::to_string(n) + ", \"qps\": " +
					     std::to_string(n * (n - 1)) + ", \"us\": " +
					     Num(sc.loss_us) + "}");
}

/* 3. the last plane dark mid-run: long-lived flows, and an all-reduce a third of the way in */
void Failover(Out &out, const Scale &sc, const FabricSpec &spec, const CollectiveResult &whole)
{
	fprintf(stderr, "failover:\n");
	FailoverResult fo = RunFailover(spec, ns3::MicroSeconds(sc.failover_at_us),
					ns3::MicroSeconds(sc.failover_end_us));
	double third_us = whole.finished ? whole.completion_us / 3 : sc.failover_at_us;
	CollectiveResult dark = RunCollective(spec, Workload::RingAllReduce, sc.all_reduce,
					      (int)sc.planes - 1, ns3::MicroSeconds(third_us));
	FILE *d = out.Data("failover.dat");

	Say("all-reduce, a plane dark a third in", dark);
	for (const auto &pt : fo.series)
		fprintf(d, "%.2f %.1f\n", pt.first, pt.second);
	fclose(d);
	fprintf(stderr, "  permutation: %.1f Gbit/s before, %.1f after; back in %.1f RTTs "
			"(%.1f us); %u QPs errored, %u work requests failed\n", fo.before_gbps,
		fo.after_gbps, fo.failover_rtts, fo.failover_us, fo.qps_errored, fo.wrs_failed);
	out.Key("failover_rtts", Num(fo.failover_rtts));
	out.Key("failover", "{\"us\": " + Num(fo.failover_us) + ", \"at_us\": " +
				    Num(sc.failover_at_us) + ", \"before_gbps\": " +
				    Num(fo.before_gbps) + ", \"after_gbps\": " +
				    Num(fo.after_gbps) + ", \"qps_errored\": " +
				    std::to_string(fo.qps_errored + dark.qps_errored) +
				    ", \"wrs_failed\": " + std::to_string(fo.wrs_failed) +
				    ", \"all_reduce\": " + CollectiveJson(dark) + "}");
}

std::string IncastJson(unsigned n, Baseline b, const IncastResult &r)
{
	char row[400];

	snprintf(row, sizeof(row),
		 "\"%u/%s\": {\"converge_rtts\": %g, \"window_rtts\": %u, "
		 "\"peak_queue_packets\": %g, \"victim_kept\": %.3f, \"finished\": %s, "
		 "\"qps_errored\": %u, \"switch_drops\": %llu, \"pauses\": %llu, "
		 "\"over_headroom\": %llu}",
		 n, BaselineName(b), r.converge_rtts, r.window_rtts, r.peak_queue_packets,
		 r.victim_kept, r.finished ? "true" : "false", r.qps_errored,
		 (unsigned long long)r.switch_drops, (unsigned long long)r.pauses,
		 (unsigned long long)r.over_headroom);
	return row;
}

/* 4. incast, on 2 planes, beside a victim */
void Incast(Out &out, const Scale &sc, const FabricSpec &spec)
{
	std::string rtts = "{", all = "{";
	FILE *d = out.Data("incast.dat");

	fprintf(stderr, "incast:\n");
	for (unsigned n : sc.incasts)
		for (Baseline b : BASELINES) {
			FabricSpec s = spec;

			s.planes = 2;
			ApplyBaseline(s, b);
			IncastResult r = RunIncast(s, n, sc.incast_total / n);

			fprintf(stderr, "  %u:1 %-12s fair in %.0f RTTs (window %u), queue at most "
					"%.0f packets, victim kept %.2f, drops %llu, pauses %llu, "
					"errored %u\n", n, BaselineName(b), r.converge_rtts,
				r.window_rtts, r.peak_queue_packets, r.victim_kept,
				(unsigned long long)r.switch_drops, (unsigned long long)r.pauses,
				r.qps_errored);
			all += std::string(all.size() > 1 ? ", " : "") + IncastJson(n, b, r);
			fprintf(d, "%u %s %g %.3f\n", n, BaselineName(b), r.converge_rtts,
				r.victim_kept);
			if (b == Baseline::MetaRoCE)
				rtts += std::string(rtts.size() > 1 ? ", " : "") + "\"" +
					std::to_string(n) + "\": " + Num(r.converge_rtts);
		}
	fclose(d);
	out.Key("incast_rtts", rtts + "}");
	out.Key("incast", all + "}");
}

/* 5. the same collectives on fat-trees and with shallow buffers, at 0% and 1% */
void Topologies(Out &out, const Scale &sc, const FabricSpec &spec)
{
	const double two[] = { 0, 0.01 };
	FabricSpec tree = spec, shallow = spec;

	tree.fat_tree_k = sc.hosts > 16 ? 8 : 4;
	shallow.buffer = 32;
	shallow.ecn_k = 8;
	fprintf(stderr, "fat-tree (k = %u) and shallow buffers (%u packets, K %u):\n",
		tree.fat_tree_k, shallow.buffer, shallow.ecn_k);
	out.Key("fat_tree_k", std::to_string(tree.fat_tree_k));
	out.Key("fat_tree", Matrix(sc, tree, "fat-tree", two, 2, nullptr, nullptr));
	out.Key("shallow", Matrix(sc, shallow, "shallow", two, 2, nullptr, nullptr));
}

/* 6. the scale point: a permutation over scale_hosts on 2 planes; run first */
void ScalePoint(Out &out, const Scale &sc, const FabricSpec &spec)
{
	FabricSpec big = spec;

	big.hosts = sc.scale_hosts;
	big.planes = 2;
	big.leaves = sc.scale_hosts / 32;
	big.spines = 16;
	fprintf(stderr, "scale: %u hosts\n", big.hosts);
	ScaleResult s = RunScale(big, sc.scale_bytes);
	rusage ru;

	/* the scale point runs first: the process's peak so far is its own */
	getrusage(RUSAGE_SELF, &ru);
	s.rss_kib = (size_t)ru.ru_maxrss;

	fprintf(stderr, "  %u QPs, %s, %.1f us simulated, %llu events in %.1f s (%.0f/s), "
			"%.0f bytes a QP (the engine's %zu), peak resident memory %zu MiB\n", s.qps,
		s.finished ? "every flow done" : "UNFINISHED", s.completion_us,
		(unsigned long long)s.events, s.wall_s, s.events_per_s, s.bytes_per_qp,
		s.engine_bytes_per_qp, s.rss_kib / 1024);
	out.Key("scale_hosts", std::to_string(s.finished ? s.hosts : 0));
	out.Key("scale", "{\"hosts\": " + std::to_string(s.hosts) +
				 ", \"qps\": " + std::to_string(s.qps) +
				 ", \"finished\": " + (s.finished ? "true" : "false") +
				 ", \"completion_us\": " + Num(s.completion_us) +
				 ", \"events\": " + std::to_string(s.events) +
				 ", \"wall_s\": " + Num(s.wall_s) +
				 ", \"events_per_s\": " + Num(s.events_per_s) +
				 ", \"bytes_per_qp\": " + Num(s.bytes_per_qp) +
				 ", \"engine_bytes_per_qp\": " +
				 std::to_string(s.engine_bytes_per_qp) +
				 ", \"rss_mib\": " + std::to_string(s.rss_kib / 1024) + "}");
}

} // namespace

int main(int argc, char **argv)
{
	if (argc < 3 || argc > 4 || (argc == 4 && strcmp(argv[3], "--quick"))) {
		fprintf(stderr, "usage: metaroce-sim-report OUT.json DATA_DIR [--quick]\n");
		return 2;
	}
	const Scale &sc = argc == 4 ? QUICK : FULL;
	Out out{ fopen(argv[1], "w"), argv[2] };
	std::map<std::string, CollectiveResult> runs;
	const FabricSpec spec = BaseSpec(sc);
	auto wall = std::chrono::steady_clock::now();
	struct utsname un;

	if (!out.json) {
		perror(argv[1]);
		return 1;
	}
	uname(&un);
	out.Key("machine", "\"" + std::to_string(sysconf(_SC_NPROCESSORS_ONLN)) +
				   " cores, kernel " + un.release + "\"");
	out.Key("fabric", "{\"hosts\": " + std::to_string(sc.hosts) + ", \"planes\": " +
				  std::to_string(sc.planes) + ", \"leaves\": " +
				  std::to_string(sc.leaves) + ", \"spines\": " +
				  std::to_string(sc.spines) + ", \"rate\": \"" + spec.rate +
				  "\", \"link_delay\": \"" + spec.delay + "\", \"mtu\": " +
				  std::to_string(spec.mtu) + ", \"ecn_k\": " +
				  std::to_string(spec.ecn_k) + ", \"buffer\": " +
				  std::to_string(spec.buffer) + ", \"all_reduce_bytes\": " +
				  std::to_string(sc.all_reduce) + ", \"all_to_all_block\": " +
				  std::to_string(sc.block) + "}");
	ScalePoint(out, sc, spec);
	Collectives(out, sc, spec, &runs);
	Planes(out, sc, spec);
	FlowsUnderLoss(out, sc, spec);
	Failover(out, sc, spec, runs["all_reduce/metaroce/0"]);
	Incast(out, sc, spec);
	Topologies(out, sc, spec);
	out.Key("seconds", Num(std::chrono::duration<double>(std::chrono::steady_clock::now() -
							      wall).count()));
	fprintf(out.json, "\n}\n");
	fclose(out.json);
	return 0;
}
