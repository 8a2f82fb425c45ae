/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * metaroce-sim-check: a small fabric through ns-3, every byte checked. 8 hosts (--hosts, at
 * most 16) on 2 planes (--planes), each a leaf-spine of 2 leaves and 2 spines or, with
 * --fat-tree K, a K-ary fat-tree (fabric.h); every link loses the share --loss asks (default
 * 1%) of its packets. Each host h has a QP to h + 1 (a ring) over 4 paths a plane and on it
 * WRITEs 4 messages of 32 KiB into its peer, READs 2 of 16 KiB back from it, and SENDs 2 of 8
 * KiB into posted receives; at the same time every other host WRITEs 64 KiB to host 0 (an
 * incast) on a QP of its own, and all of them run a ring all-reduce of 64 KiB each, a
 * recursive-doubling one of 16 KiB (with a power of two of hosts) and an all-to-all of 4 KiB
 * blocks (collective.h), their results computed. Passes when every work request completed
 * once with success, every byte is where it belongs, all of it ended within 2 s of simulated
 * time (a deadlock or a livelock does not), every top switch (spine or core) carried some of
 * it (the paths' source ports spread over the fabric; not for the RoCEv2 baseline, whose QPs
 * take one path each), every collective's result is right and, without loss or failure (and
 * with 4 hosts or more), the incast's queue marked CE and the senders still finished.
 * --fail-plane P: plane P goes dark, silently, 100 us into the run (when much is still in
 * flight there); the rest must carry everything. --rocev2: the engine's RoCEv2 baseline on
 * every QP; --pfc: switches pause their senders (queue.h) and never drop, and then no ingress
 * may hold more than xoff and its headroom, and on a whole fabric the incast must have made
 * some switch pause; --buffer N: switch queues marking from N/4 packets (N at least 8) and
 * holding N (without PFC; with it, xoff is twice the marking threshold). Prints what moved;
 * exit 0 passed, 1 failed, 2 a wrong command line.
 *
 *	metaroce-sim-check [--loss SHARE] [--hosts N] [--planes P] [--fail-plane P]
 *			   [--fat-tree K] [--rocev2] [--pfc] [--buffer PACKETS]
 */
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include <ns3/simulator.h>

#include "collective.h"
#include "fabric.h"

using namespace metaroce_sim;

namespace {

constexpr uint32_t WRITE_LEN = 32768, WRITES = 4;
constexpr uint32_t READ_LEN = 16384, READS = 2;
constexpr uint32_t SEND_LEN = 8192, SENDS = 2;
constexpr uint32_t INCAST_LEN = 65536;
constexpr unsigned MAX_HOSTS = 16;
constexpr uint32_t ALLREDUCE_LEN = 65536; /* each host's buffer, at most: a multiple of the
					   * host count is taken */
constexpr uint32_t DOUBLING_LEN = 16384, BLOCK_LEN = 4096;
/* Each host's region: what it writes and sends from, what it is read from, where its
 * peer's WRITEs, SENDs and its own READs land. */
constexpr uint32_t OUT_WRITE = 0, OUT_SEND = OUT_WRITE + WRITE_LEN * WRITES,
		   READ_SRC = OUT_SEND + SEND_LEN * SENDS,
		   IN_WRITE = READ_SRC + READ_LEN * READS, IN_SEND = IN_WRITE + WRITE_LEN * WRITES,
		   IN_READ = IN_SEND + SEND_LEN * SENDS, IN_INCAST = IN_READ + READ_LEN * READS,
		   ALLREDUCE = IN_INCAST + INCAST_LEN * MAX_HOSTS,
		   DOUBLING = ALLREDUCE + 3 * ALLREDUCE_LEN,
		   ALLTOALL = DOUBLING + 5 * DOUBLING_LEN,
		   REGION = ALLTOALL + 2 * MAX_HOSTS * BLOCK_LEN;

/* The byte at offset i of what host h offers (its writes, sends and READ source). */
uint8_t Pattern(unsigned h, uint32_t i)
{
	return (uint8_t)((h * 131u + i * 7u + (i >> 9)) % 251u + 1u);
}

struct Tally {
	unsigned expected = 0, done = 0, failed = 0;
	std::set<std::tuple<const Qp *, bool, uint64_t>> seen; /* (QP, receive, wr_id) */
	std::vector<const Collective *> collectives;

	/* all done: when is the figure */
	void StopIfDone() const
	{
		for (const Collective *c : collectives)
			if (!c->Done())
				return;
		if (done == expected)
			ns3::Simulator::Stop();
	}
};

mrc_send_wr Wr(uint8_t opcode, uint64_t wr_id, uint64_t local, uint32_t len, uint64_t remote,
	       uint32_t rkey)
{
	mrc_send_wr wr = {};

	wr.wr_id = wr_id;
	wr.opcode = opcode;
	wr.flags = MRC_SEND_SIGNALED;
	wr.num_sge = 1;
	wr.sge[0].addr = local;
	wr.sge[0].length = len;
	wr.rkey = rkey;
	wr.raddr = remote;
	return wr;
}

/* Each work request completes once, with success, a receive as the SEND it took; the run
 * stops when the last completes. */
Completion Counter(Tally &tally, const Qp *qp)
{
	return [&tally, qp](bool recv, const mrc_completion &wc) {
		const char *wrong = nullptr;

		tally.done++;
		if (!tally.seen.insert({ qp, recv, wc.wr_id }).second)
			wrong = "a second time";
		else if (wc.status != MRC_WC_SUCCESS)
			wrong = mrc_wc_status_name(wc.status);
		else if (recv && (wc.opcode != MRC_WC_RECV || wc.byte_len != SEND_LEN))
			wrong = "as another receive than its SEND";
		if (wrong) {
			tally.failed++;
			fprintf(stderr, "QP %u: %s %llu completed %s\n", qp->qpn,
				recv ? "receive" : "work request", (unsigned long long)wc.wr_id,
				wrong);
		}
		tally.StopIfDone();
	};
}

/* A work request the engine refused fails the run at once, saying so. */
void Posted(Tally &tally, const Qp *qp, int e)
{
	tally.expected++;
	if (e) {
		tally.failed++;
		tally.done++;
		fprintf(stderr, "QP %u: a work request refused: %s\n", qp->qpn, strerror(-e));
	}
}

/* Host h's work: its ring QP's, and its part of the incast into host 0. */
void PostWork(Fabric &f, unsigned h, Tally &tally)
{
	Host &me = *f.apps[h], &peer = *f.apps[(h + 1) % f.apps.size()];
	const uint64_t mine = me.Addr(), theirs = peer.Addr();
	const uint32_t key = peer.Key();
	Qp *peer_side, *qp = me.Connect(peer, f.paths_per_plane, 0x5eed + h, &peer_side);

	qp->on_complete = Counter(tally, qp);
	peer_side->on_complete = Counter(tally, peer_side);
	for (uint32_t k = 0; k < SENDS; k++) {
		mrc_recv_wr r = {};

		r.wr_id = k;
		r.num_sge = 1;
		r.sge[0].addr = theirs + IN_SEND + k * SEND_LEN;
		r.sge[0].length = SEND_LEN;
		Posted(tally, peer_side, peer.PostRecv(peer_side, r));
	}
	for (uint32_t k = 0, at = 0; k < WRITES; k++, at += WRITE_LEN)
		Posted(tally, qp, me.PostSend(qp, Wr(MRC_WR_WRITE, k, mine + OUT_WRITE + at,
						     WRITE_LEN, theirs + IN_WRITE + at, key)));
	for (uint32_t k = 0, at = 0; k < READS; k++, at += READ_LEN)
		Posted(tally, qp, me.PostSend(qp, Wr(MRC_WR_READ, 100 + k, mine + IN_READ + at,
						     READ_LEN, theirs + READ_SRC + at, key)));
	for (uint32_t k = 0, at = 0; k < SENDS; k++, at += SEND_LEN)
		Posted(tally, qp, me.PostSend(qp, Wr(MRC_WR_SEND, 200 + k, mine + OUT_SEND + at,
						     SEND_LEN, 0, 0)));
	if (!h)
		return;
	/* the incast: host h's first writes again, into host 0 */
	Host &sink = *f.apps[0];
	Qp *sink_side, *in = me.Connect(sink, f.paths_per_plane, 0x1ca57 + h, &sink_side);

	in->on_complete = Counter(tally, in);
	sink_side->on_complete = Counter(tally, sink_side);
	Posted(tally, in, me.PostSend(in, Wr(MRC_WR_WRITE, 300, mine + OUT_WRITE, INCAST_LEN,
					     sink.Addr() + IN_INCAST + h * INCAST_LEN,
					     sink.Key())));
}

} // namespace

int main(int argc, char **argv)
{
	FabricSpec spec;
	Tally tally;
	int fail_plane = -1;

	spec.loss = 0.01;
	spec.mem_bytes = REGION;
	for (int i = 1; i < argc; i += 2) {
		char *end = nullptr;
		double v = i + 1 < argc ? strtod(argv[i + 1], &end) : 0;
		bool number = end && end != argv[i + 1] && !*end;

		/* (the two flags take no value: i-- so the loop's step of 2 moves on by one) */
		if (!strcmp(argv[i], "--rocev2") && i--)
			spec.transport = Transport::RoCEv2;
		else if (!strcmp(argv[i], "--pfc") && i--)
			spec.pfc = true;
		else if (number && !strcmp(argv[i], "--loss") && v >= 0 && v <= 1)
			spec.loss = v;
		else if (number && !strcmp(argv[i], "--hosts") && v == (unsigned)v)
			spec.hosts = (unsigned)v;
		else if (number && !strcmp(argv[i], "--planes") && v == (unsigned)v)
			spec.planes = (unsigned)v;
		else if (number && !strcmp(argv[i], "--fail-plane") && v == (unsigned)v)
			fail_plane = (int)v;
		else if (number && !strcmp(argv[i], "--fat-tree") && v == (unsigned)v)
			spec.fat_tree_k = (unsigned)v;
		else if (number && !strcmp(argv[i], "--buffer") && v == (unsigned)v && v >= 8) {
			spec.buffer = (unsigned)v;
			spec.ecn_k = spec.buffer / 4;
		}
		else {
			fprintf(stderr, "usage: metaroce-sim-check [--loss SHARE] [--hosts N] "
					"[--planes P] [--fail-plane P] [--fat-tree K] [--rocev2] "
					"[--pfc] [--buffer PACKETS]\n");
			return 2;
		}
	}
	if (spec.hosts < 2 || spec.hosts > MAX_HOSTS || spec.planes < 1 ||
	    spec.planes > MRC_MAX_PLANES ||
	    (fail_plane >= 0 && (fail_plane >= (int)spec.planes || spec.planes < 2))) {
		fprintf(stderr, "metaroce-sim-check: 2 to %u hosts, 1 to %u planes, a plane to "
				"fail of those and not the only one\n", MAX_HOSTS, MRC_MAX_PLANES);
		return 2;
	}
	Fabric f;

	try {
		f = BuildFabric(spec);
	} catch (const std::invalid_argument &e) {
		fprintf(stderr, "metaroce-sim-check: %s\n", e.what());
		return 2;
	}

	for (unsigned h = 0; h < spec.hosts; h++)
		for (uint32_t i = 0; i < IN_WRITE; i++)
			f.apps[h]->Mem()[i] = Pattern(h, i);
	/* the work, posted once the engines have started, and the collectives beside it */
	auto stop = [&tally]() { tally.StopIfDone(); };
	RingAllReduce ring(f, ALLREDUCE_LEN / spec.hosts * spec.hosts, ALLREDUCE, stop);
	AllToAll all_to_all(f, BLOCK_LEN, ALLTOALL, stop);
	std::unique_ptr<RecursiveDoublingAllReduce> doubling;
	std::vector<std::pair<const char *, Collective *>> collectives = {
		{ "ring all-reduce", &ring }, { "all-to-all", &all_to_all }
	};

	if (!(spec.hosts & (spec.hosts - 1))) {
		doubling = std::make_unique<RecursiveDoublingAllReduce>(f, DOUBLING_LEN, DOUBLING,
									stop);
		collectives.push_back({ "recursive-doubling all-reduce", doubling.get() });
	}
	for (auto &c : collectives)
		tally.collectives.push_back(c.second);
	ns3::Simulator::Schedule(ns3::MicroSeconds(1), [&]() {
		for (unsigned h = 0; h < spec.hosts; h++)
			PostWork(f, h, tally);
		for (auto &c : collectives)
			c.second->Start();
	});
	if (fail_plane >= 0)
		BlackholePlane(f, (unsigned)fail_plane, ns3::MicroSeconds(100));
	ns3::Simulator::Stop(ns3::Seconds(2));
	ns3::Simulator::Run();

	/* every byte where it belongs: h's peer holds h's writes and sends, h holds its reads */
	unsigned wrong = 0;
	uint64_t sent = 0, received = 0, ce = 0, resent = 0;

	for (unsigned h = 0; h < spec.hosts; h++) {
		const uint8_t *me = f.apps[h]->Mem(), *peer = f.apps[(h + 1) % spec.hosts]->Mem();
		unsigned p = (h + 1) % spec.hosts;

		for (uint32_t i = 0; i < WRITE_LEN * WRITES; i++)
			wrong += peer[IN_WRITE + i] != Pattern(h, OUT_WRITE + i);
		for (uint32_t i = 0; i < SEND_LEN * SENDS; i++)
			wrong += peer[IN_SEND + i] != Pattern(h, OUT_SEND + i);
		for (uint32_t i = 0; i < READ_LEN * READS; i++)
			wrong += me[IN_READ + i] != Pattern(p, READ_SRC + i);
		for (uint32_t i = 0; h && i < INCAST_LEN; i++)
			wrong += f.apps[0]->Mem()[IN_INCAST + h * INCAST_LEN + i] !=
				 Pattern(h, OUT_WRITE + i);
		sent += f.apps[h]->DatagramsSent();
		received += f.apps[h]->DatagramsReceived();
		ce += f.apps[h]->CeReceived();
		resent += f.apps[h]->Retransmits();
	}
	bool reduced = true;
	std::string times;

	for (auto &c : collectives) {
		std::string why;
		char t[64];

		if (c.second->Failures() || !c.second->Verify(&why)) {
			fprintf(stderr, "metaroce-sim-check: the %s failed: %s (%u failures)\n",
				c.first, why.c_str(), c.second->Failures());
			reduced = false;
		}
		snprintf(t, sizeof(t), "%s%.3f", times.empty() ? "" : " / ",
			 c.second->Done() ? c.second->Elapsed().GetSeconds() * 1e3 : 0.0);
		times += t;
	}
	/* the top tier's shares: what the source ports spread */
	std::string spread, shape;
	unsigned idle_spines = 0;

	for (unsigned t : f.top) {
		uint64_t n = f.routing[t]->Forwarded();

		spread += (spread.empty() ? "" : " ") + std::to_string(n);
		idle_spines += !n;
	}
	const SwitchCounts sw = CountSwitches(f);
	const uint64_t queue_drops = sw.drops, pauses = sw.pauses, over_headroom = sw.over_headroom;

	shape = spec.fat_tree_k ? std::to_string(spec.fat_tree_k) + "-ary fat-trees"
				: "leaf-spines of " + std::to_string(spec.leaves) + "x" +
					  std::to_string(spec.spines);
	printf("metaroce-sim-check: %u hosts, %u planes (%s), %s%s, %.3g loss%s: "
	       "%u of %u work requests completed (%u failed), %u bytes wrong; %llu datagrams "
	       "sent (%llu data resent), %llu received (%llu CE), %llu dropped by switches%s; "
	       "top switches forwarded %s; collectives %s (ring, all-to-all%s) in %s ms; %.3f ms "
	       "simulated\n",
	       spec.hosts, spec.planes, shape.c_str(),
	       spec.transport == Transport::RoCEv2 ? "RoCEv2 baseline" : "MetaRoCE",
	       spec.pfc ? " with PFC" : "", spec.loss,
	       fail_plane < 0 ? "" : (", plane " + std::to_string(fail_plane) +
				      " dark from 0.1 ms").c_str(), tally.done,
	       tally.expected, tally.failed, wrong, (unsigned long long)sent,
	       (unsigned long long)resent, (unsigned long long)received, (unsigned long long)ce,
	       (unsigned long long)queue_drops,
	       spec.pfc ? (", " + std::to_string(pauses) + " PAUSEs").c_str() : "",
	       spread.c_str(), reduced ? "right" : "WRONG", doubling ? ", doubling" : "",
	       times.c_str(), ns3::Simulator::Now().GetSeconds() * 1e3);
	ns3::Simulator::Destroy();
	/* one path a QP: a few QPs need not reach every top switch */
	if (spec.transport == Transport::RoCEv2)
		idle_spines = 0;
	if (idle_spines)
		fprintf(stderr, "metaroce-sim-check: %u top switches carried nothing\n",
			idle_spines);
	/* lossless means it: what an ingress held past its headroom a switch would have lost */
	bool pfc_held = !spec.pfc || !over_headroom;

	if (!pfc_held)
		fprintf(stderr, "metaroce-sim-check: PFC held %llu bytes past the headroom\n",
			(unsigned long long)over_headroom);
	/* an incast of 3 senders or more, on a whole, lossless fabric, must find a queue */
	bool marks_owed = !spec.loss && fail_plane < 0 && spec.hosts >= 4;

	if (marks_owed && !ce)
		fprintf(stderr, "metaroce-sim-check: the incast was never marked CE\n");
	/* and with PFC, an incast on a whole fabric fills some ingress to xoff */
	bool paused = !spec.pfc || !marks_owed || pauses;

	if (!paused)
		fprintf(stderr, "metaroce-sim-check: PFC never paused a sender\n");
	return tally.done == tally.expected && !tally.failed && !wrong && !idle_spines &&
			       (!marks_owed || ce) && reduced && pfc_held && paused
		       ? 0
		       : 1;
}
