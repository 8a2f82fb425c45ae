/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
#include "report.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <memory>

#include <malloc.h>

#include <ns3/data-rate.h>
#include <ns3/simulator.h>

#include "collective.h"
#include "flows.h"

namespace metaroce_sim {

using ns3::MicroSeconds;
using ns3::Simulator;
using ns3::Time;

namespace {

constexpr uint32_t FLOW_MESSAGE = 65536;
constexpr unsigned FLOW_DEPTH = 4;
constexpr unsigned FAIR_PACKETS = 8; /* a fairness window's packets of a fair share per sender */
constexpr double JAIN_FAIR = 0.95;
constexpr unsigned VICTIM_START_RTTS = 30;

/* The switches' counts, and the hosts' engines' */
struct Totals : SwitchCounts {
	uint64_t retransmits = 0, ce = 0;
	unsigned errored = 0;
};

Totals Count(const Fabric &f)
{
	Totals t;

	static_cast<SwitchCounts &>(t) = CountSwitches(f);
	for (const auto &h : f.apps) {
		t.retransmits += h->Retransmits();
		t.ce += h->CeReceived();
		t.errored += h->ErroredQps();
	}
	return t;
}

double Seconds(std::chrono::steady_clock::time_point since)
{
	return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

double LineRate(const FabricSpec &spec) /* a host's, every plane, bit/s */
{
	return (double)ns3::DataRate(spec.rate).GetBitRate() * spec.planes;
}

double Jain(const std::vector<double> &x)
{
	double sum = 0, squares = 0;

	for (double v : x) {
		sum += v;
		squares += v * v;
	}
	return squares > 0 ? sum * sum / ((double)x.size() * squares) : 0;
}

/* Calls sample() every `every`, the first time `every` after the time Start is given, until
 * the simulation stops; the caller keeps it alive that long. */
class Ticker {
public:
	Ticker(Time every, std::function<void()> sample) : every_(every), sample_(std::move(sample))
	{
	}
	void Start(Time at) { Simulator::Schedule(at + every_, &Ticker::Tick, this); }

private:
	void Tick()
	{
		sample_();
		Simulator::Schedule(every_, &Ticker::Tick, this);
	}

	Time every_;
	std::function<void()> sample_;
};

} // namespace

const char *BaselineName(Baseline b)
{
	switch (b) {
	case Baseline::MetaRoCE:
		return "metaroce";
	case Baseline::RoCEv2Pfc:
		return "rocev2_pfc";
	case Baseline::RoCEv2Lossy:
		return "rocev2_lossy";
	}
	return "?";
}

void ApplyBaseline(FabricSpec &spec, Baseline b)
{
	spec.transport = b == Baseline::MetaRoCE ? Transport::MetaRoCE : Transport::RoCEv2;
	spec.pfc = b == Baseline::RoCEv2Pfc;
}

const char *WorkloadName(Workload w)
{
	return w == Workload::RingAllReduce ? "all_reduce" : "all_to_all";
}

CollectiveResult RunCollective(const FabricSpec &spec, Workload w, uint32_t bytes, int fail_plane,
			       Time fail_at)
{
	CollectiveResult r;
	auto wall = std::chrono::steady_clock::now();
	uint64_t events0 = Simulator::GetEventCount();
	Fabric f = BuildFabric(spec);
	std::unique_ptr<Collective> c;
	auto stop = []() { Simulator::Stop(); };

	if (w == Workload::RingAllReduce)
		c = std::make_unique<RingAllReduce>(f, bytes / spec.hosts * spec.hosts, 0, stop);
	else
		c = std::make_unique<AllToAll>(f, bytes, 0, stop);
	Simulator::Schedule(MicroSeconds(1), [&c]() { c->Start(); });
	if (fail_plane >= 0)
		BlackholePlane(f, (unsigned)fail_plane, fail_at);
	Simulator::Stop(ns3::Seconds(1));
	Simulator::Run();

	Totals t = Count(f);
	std::string why;

	r.finished = c->Done();
	r.right = r.finished && !c->Failures() && c->Verify(&why);
	r.completion_us = r.finished ? c->Elapsed().GetSeconds() * 1e6 : -1;
	if (r.finished)
		r.goodput_share = (double)c->BytesSentPerHost() * 8 / c->Elapsed().GetSeconds() /
				  LineRate(spec);
	r.qps_errored = t.errored;
	r.retransmits = t.retransmits;
	r.ce = t.ce;
	r.switch_drops = t.drops;
	r.pauses = t.pauses;
	r.over_headroom = t.over_headroom;
	r.events = Simulator::GetEventCount() - events0;
	Simulator::Destroy();
	r.wall_s = Seconds(wall);
	return r;
}

namespace {

/* Bytes the victim (host n + 2 -> host 1, beside the incast's receiver) places in its window,
 * with the incast starting at the window's start or without it. */
struct IncastRun {
	FabricSpec spec;
	unsigned n;
	uint64_t bytes;

	uint64_t Victim(bool incast, IncastResult *r) const;
};

uint64_t IncastRun::Victim(bool incast, IncastResult *r) const
{
	Fabric f = BuildFabric(spec);
	const double rtt = f.base_rtt_s;
	const Time t0 = ns3::Seconds(VICTIM_START_RTTS * rtt);
	const unsigned victim_src = n + 2, receiver = 0;
	Flows victim(f, FLOW_MESSAGE, FLOW_DEPTH, 0);
	Flows senders(f, FLOW_MESSAGE, FLOW_DEPTH, 0);
	unsigned v = victim.Add(victim_src, 1, 0, MicroSeconds(1));
	std::vector<std::vector<double>> placed; /* [sample][sender] */
	std::vector<uint32_t> queue; /* packets before the receiver, the most of any plane's */
	uint64_t before = 0, after = 0;
	bool any_done = false, window_over = false;

	for (unsigned i = 0; incast && i < n; i++)
		senders.Add(2 + i, receiver, bytes, t0);
	Simulator::Schedule(t0, [&]() { before = victim.Placed(v); });
	/* sampled every base RTT from the incast's start until its first sender is done */
	Ticker ticker(ns3::Seconds(rtt), [&]() {
		if (any_done)
			return;
		std::vector<double> s(n);
		uint32_t q = 0;

		for (unsigned i = 0; i < n; i++) {
			s[i] = (double)senders.Placed(i);
			any_done |= senders.Done(i);
		}
		for (auto &out : f.to_host[receiver])
			q = std::max(q, out->GetNPackets());
		placed.push_back(std::move(s));
		queue.push_back(q);
	});

	if (incast)
		ticker.Start(t0 - ns3::Seconds(rtt));
	/* the victim's window: as long as the incast needs at the receiver's line rate */
	const Time window = ns3::Seconds((double)n * (double)bytes * 8 / LineRate(spec));

	Simulator::Schedule(t0 + window, [&]() {
		after = victim.Placed(v);
		window_over = true;
		if (!incast || senders.AllDone())
			Simulator::Stop();
	});
	senders.OnAllDone([&]() {
		if (window_over)
			Simulator::Stop();
	});
	Simulator::Stop(ns3::Seconds(1));
	Simulator::Run();
	if (incast) {
		Totals t = Count(f);
		/* (the engine's payloads: 4 KiB, or what the MTU leaves) */
		const double pkts_per_rtt = spec.rx_capacity * LineRate(spec) * rtt / 8 /
					    std::min(4096u, spec.mtu - 20 - 8 - 56);
		unsigned fair = (unsigned)std::ceil(FAIR_PACKETS * n / pkts_per_rtt);

		r->window_rtts = std::max(8u, fair);
		r->finished = senders.AllDone();
		r->qps_errored = t.errored;
		r->switch_drops = t.drops;
		r->pauses = t.pauses;
		r->over_headroom = t.over_headroom;
		for (auto &out : f.to_host[receiver])
			r->peak_queue_packets = std::max(r->peak_queue_packets,
							 (double)out->MaxPackets());
		const size_t w = r->window_rtts;

		for (size_t s = 0; s + w < placed.size() && r->converge_rtts < 0; s++) {
			bool low = true;
			std::vector<double> share(n);

			for (size_t k = s + 1; k <= s + w && low; k++)
				low = queue[k] < spec.ecn_k;
			for (unsigned i = 0; low && i < n; i++)
				share[i] = placed[s + w][i] - placed[s][i];
			if (low && Jain(share) >= JAIN_FAIR)
				r->converge_rtts = (double)s;
		}
	}
	Simulator::Destroy();
	return after - before;
}

} // namespace

IncastResult RunIncast(FabricSpec spec, unsigned n, uint64_t bytes)
{
	IncastResult r;

	spec.hosts = n + 3; /* the receiver, the victim's receiver, n senders, the victim */
	spec.leaves = (spec.hosts + 15) / 16;
	bytes = (bytes + FLOW_MESSAGE - 1) / FLOW_MESSAGE * FLOW_MESSAGE;
	spec.mem_bytes = FLOW_MESSAGE;

	IncastRun run{ spec, n, bytes };
	uint64_t with = run.Victim(true, &r), alone = run.Victim(false, nullptr);

	r.victim_kept = alone ? (double)with / (double)alone : 0;
	return r;
}

FailoverResult RunFailover(const FabricSpec &spec, Time at, Time end)
{
	FailoverResult r;
	FabricSpec s = spec;

	s.mem_bytes = FLOW_MESSAGE;
	Fabric f = BuildFabric(s);
	const double rtt = f.base_rtt_s;
	Flows flows(f, FLOW_MESSAGE, FLOW_DEPTH, 0);
	std::vector<double> total; /* bytes placed by every flow, sampled every RTT */
	const unsigned n = spec.hosts;

	/* a permutation: each host to the host half the fabric away */
	for (unsigned h = 0; h < n; h++)
		flows.Add(h, (h + n / 2) % n, 0, MicroSeconds(1));
	Ticker ticker(ns3::Seconds(rtt), [&]() {
		double sum = 0;

		for (unsigned i = 0; i < flows.Count(); i++)
			sum += (double)flows.Placed(i);
		total.push_back(sum);
	});

	ticker.Start(Time());
	BlackholePlane(f, spec.planes - 1, at);
	Simulator::Stop(end);
	Simulator::Run();

	const size_t fail = (size_t)(at.GetSeconds() / rtt), window = 8;
	auto rate = [&](size_t from, size_t to) { /* bit/s over samples (from, to] */
		return (total[to] - total[from]) * 8 / ((double)(to - from) * rtt);
	};

	if (fail >= 4 && total.size() > fail + 2 * window) {
		r.before_gbps = rate(fail / 2, fail - 1) / 1e9;
		r.after_gbps = rate(total.size() - 1 - 2 * window, total.size() - 1) / 1e9;
		const double goal = 0.9 * r.before_gbps * 1e9 * (spec.planes - 1) / spec.planes;
		size_t back = fail; /* the end of the last window under the goal */

		for (size_t t = fail; t + window < total.size(); t++)
			if (rate(t, t + window) < goal)
				back = t + window;
		/* recovered only if windows after the last bad one were seen */
		if (back + window < total.size()) {
			r.failover_rtts = (double)(back - fail);
			r.failover_us = r.failover_rtts * rtt * 1e6;
		}
	}
	for (size_t t = 1; t < total.size(); t++)
		r.series.push_back({ (double)(t + 1) * rtt * 1e6, rate(t - 1, t) / 1e9 });
	r.qps_errored = Count(f).errored;
	r.wrs_failed = flows.Failures();
	Simulator::Destroy();
	return r;
}

ThroughputResult RunThroughput(const FabricSpec &spec, unsigned peers, Time run)
{
	ThroughputResult r;
	auto wall = std::chrono::steady_clock::now();
	FabricSpec s = spec;

	s.mem_bytes = FLOW_MESSAGE;
	Fabric f = BuildFabric(s);
	Flows flows(f, FLOW_MESSAGE, 1, 0);
	double half = 0;

	for (unsigned h = 0; h < spec.hosts; h++)
		for (unsigned k = 1; k <= peers; k++)
			flows.Add(h, (h + k) % spec.hosts, 0, MicroSeconds(1));
	auto placed = [&flows]() {
		double sum = 0;

		for (unsigned i = 0; i < flows.Count(); i++)
			sum += (double)flows.Placed(i);
		return sum;
	};
	Simulator::Schedule(run / 2, [&]() { half = placed(); });
	Simulator::Schedule(run, [&]() {
		r.gbps = (placed() - half) * 8 / (run / 2).GetSeconds() / 1e9;
		Simulator::Stop();
	});
	Simulator::Run();

	Totals t = Count(f);

	r.qps = (unsigned)flows.Count();
	r.qps_errored = t.errored;
	r.retransmits = t.retransmits;
	r.switch_drops = t.drops;
	Simulator::Destroy();
	r.wall_s = Seconds(wall);
	return r;
}

ScaleResult RunScale(const FabricSpec &spec, uint64_t bytes)
{
	ScaleResult r;
	auto wall = std::chrono::steady_clock::now();
	uint64_t events0 = Simulator::GetEventCount();
	FabricSpec s = spec;

	s.mem_bytes = FLOW_MESSAGE;
	Fabric f = BuildFabric(s);
	Flows flows(f, FLOW_MESSAGE, FLOW_DEPTH, 0);
	const unsigned n = spec.hosts, idle = 256;
	Qp *other;

	/* what a QP costs: idle pairs between two hosts, the heap before and after */
	size_t heap0 = mallinfo2().uordblks;

	for (unsigned i = 0; i < idle; i++)
		f.apps[0]->Connect(*f.apps[1], f.paths_per_plane, 0x51e + i, &other);
	r.bytes_per_qp = (double)(mallinfo2().uordblks - heap0) / (2.0 * idle);
	r.engine_bytes_per_qp = mrc_conn_footprint(other->conn);
	for (unsigned h = 0; h < n; h++)
		flows.Add(h, (h + n / 2 + 1) % n, bytes, MicroSeconds(1));
	flows.OnAllDone([]() { Simulator::Stop(); });
	Simulator::Stop(ns3::Seconds(1));
	Simulator::Run();

	Time last;

	for (unsigned i = 0; i < flows.Count(); i++)
		last = std::max(last, flows.Finish(i));
	r.hosts = n;
	r.qps = (unsigned)(2 * (flows.Count() + idle));
	r.finished = flows.AllDone() && !flows.Failures();
	r.completion_us = last.GetSeconds() * 1e6;
	r.events = Simulator::GetEventCount() - events0;
	Simulator::Destroy();
	r.wall_s = Seconds(wall);
	r.events_per_s = (double)r.events / r.wall_s;
	return r;
}

} // namespace metaroce_sim
