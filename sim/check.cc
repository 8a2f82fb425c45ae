/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * metaroce-sim-check: a small fabric through ns-3, every byte checked. 8 hosts on 2 planes
 * (a switch each), every link losing 1% of its packets; each host h has a QP to h + 1 (a
 * ring) over 4 paths a plane and on it WRITEs 4 messages of 32 KiB into its peer, READs 2 of
 * 16 KiB back from it, and SENDs 2 of 8 KiB into posted receives. Passes when every work
 * request completed with success, every byte is where it belongs, and all of it ended within
 * 2 s of simulated time (a deadlock or a livelock does not). Prints what moved.
 *
 *	metaroce-sim-check [--loss SHARE] [--hosts N] [--planes P]
 */
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <ns3/simulator.h>

#include "fabric.h"

using namespace metaroce_sim;

namespace {

constexpr uint32_t WRITE_LEN = 32768, WRITES = 4;
constexpr uint32_t READ_LEN = 16384, READS = 2;
constexpr uint32_t SEND_LEN = 8192, SENDS = 2;
/* Each host's region: what it writes and sends from, what it is read from, where its
 * peer's WRITEs, SENDs and its own READs land. */
constexpr uint32_t OUT_WRITE = 0, OUT_SEND = OUT_WRITE + WRITE_LEN * WRITES,
		   READ_SRC = OUT_SEND + SEND_LEN * SENDS,
		   IN_WRITE = READ_SRC + READ_LEN * READS, IN_SEND = IN_WRITE + WRITE_LEN * WRITES,
		   IN_READ = IN_SEND + SEND_LEN * SENDS, REGION = IN_READ + READ_LEN * READS;

/* The byte at offset i of what host h offers (its writes, sends and READ source). */
uint8_t Pattern(unsigned h, uint32_t i)
{
	return (uint8_t)((h * 131u + i * 7u + (i >> 9)) % 251u + 1u);
}

struct Tally {
	unsigned expected = 0, done = 0, failed = 0;
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

} // namespace

int main(int argc, char **argv)
{
	FabricSpec spec;
	Tally tally;

	spec.loss = 0.01;
	spec.mem_bytes = REGION;
	for (int i = 1; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--loss"))
			spec.loss = atof(argv[i + 1]);
		else if (!strcmp(argv[i], "--hosts"))
			spec.hosts = (unsigned)atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--planes"))
			spec.planes = (unsigned)atoi(argv[i + 1]);
		else {
			fprintf(stderr, "usage: metaroce-sim-check [--loss SHARE] [--hosts N] "
					"[--planes P]\n");
			return 2;
		}
	}
	if (spec.hosts < 2 || spec.planes < 1 || spec.planes > MRC_MAX_PLANES) {
		fprintf(stderr, "metaroce-sim-check: 2 hosts and 1 to %u planes at least\n",
			MRC_MAX_PLANES);
		return 2;
	}
	Fabric f = BuildFabric(spec);

	for (unsigned h = 0; h < spec.hosts; h++)
		for (uint32_t i = 0; i < IN_WRITE; i++)
			f.apps[h]->Mem()[i] = Pattern(h, i);
	/* the work, posted once the engines have started */
	ns3::Simulator::Schedule(ns3::MicroSeconds(1), [&]() {
		for (unsigned h = 0; h < spec.hosts; h++) {
			Host &me = *f.apps[h], &peer = *f.apps[(h + 1) % spec.hosts];
			Qp *peer_side;
			Qp *qp = me.Connect(peer, 4, 0x5eed + h, &peer_side);
			auto count = [&tally](bool, const mrc_completion &wc) {
				tally.done++;
				if (wc.status != MRC_WC_SUCCESS) {
					tally.failed++;
					fprintf(stderr, "a work request completed %s\n",
						mrc_wc_status_name(wc.status));
				}
				if (tally.done == tally.expected)
					ns3::Simulator::Stop(); /* all done: when is the figure */
			};

			qp->on_complete = count;
			peer_side->on_complete = count;
			for (uint32_t k = 0; k < SENDS; k++) {
				mrc_recv_wr r = {};

				r.wr_id = k;
				r.num_sge = 1;
				r.sge[0].addr = peer.Addr() + IN_SEND + k * SEND_LEN;
				r.sge[0].length = SEND_LEN;
				peer.PostRecv(peer_side, r);
				tally.expected++;
			}
			for (uint32_t k = 0; k < WRITES; k++, tally.expected++)
				me.PostSend(qp, Wr(MRC_WR_WRITE, k, me.Addr() + OUT_WRITE + k * WRITE_LEN,
						   WRITE_LEN, peer.Addr() + IN_WRITE + k * WRITE_LEN,
						   peer.Key()));
			for (uint32_t k = 0; k < READS; k++, tally.expected++)
				me.PostSend(qp, Wr(MRC_WR_READ, 100 + k,
						   me.Addr() + IN_READ + k * READ_LEN, READ_LEN,
						   peer.Addr() + READ_SRC + k * READ_LEN, peer.Key()));
			for (uint32_t k = 0; k < SENDS; k++, tally.expected++)
				me.PostSend(qp, Wr(MRC_WR_SEND, 200 + k,
						   me.Addr() + OUT_SEND + k * SEND_LEN, SEND_LEN, 0, 0));
		}
	});
	ns3::Simulator::Stop(ns3::Seconds(2));
	ns3::Simulator::Run();

	/* every byte where it belongs: h's peer holds h's writes and sends, h holds its reads */
	unsigned wrong = 0;
	uint64_t sent = 0, received = 0, ce = 0;

	for (unsigned h = 0; h < spec.hosts; h++) {
		const uint8_t *me = f.apps[h]->Mem(), *peer = f.apps[(h + 1) % spec.hosts]->Mem();
		unsigned p = (h + 1) % spec.hosts;

		for (uint32_t i = 0; i < WRITE_LEN * WRITES; i++)
			wrong += peer[IN_WRITE + i] != Pattern(h, OUT_WRITE + i);
		for (uint32_t i = 0; i < SEND_LEN * SENDS; i++)
			wrong += peer[IN_SEND + i] != Pattern(h, OUT_SEND + i);
		for (uint32_t i = 0; i < READ_LEN * READS; i++)
			wrong += me[IN_READ + i] != Pattern(p, READ_SRC + i);
		sent += f.apps[h]->DatagramsSent();
		received += f.apps[h]->DatagramsReceived();
		ce += f.apps[h]->CeReceived();
	}
	printf("metaroce-sim-check: %u hosts, %u planes, %.3g loss: %u of %u work requests "
	       "completed (%u failed), %u bytes wrong; %llu datagrams sent, %llu received "
	       "(%llu CE), %.3f ms simulated\n",
	       spec.hosts, spec.planes, spec.loss, tally.done, tally.expected, tally.failed, wrong,
	       (unsigned long long)sent, (unsigned long long)received, (unsigned long long)ce,
	       ns3::Simulator::Now().GetSeconds() * 1e3);
	ns3::Simulator::Destroy();
	return tally.done == tally.expected && !tally.failed && !wrong ? 0 : 1;
}
