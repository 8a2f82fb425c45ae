/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
#include "flows.h"

#include <stdexcept>

#include <ns3/simulator.h>

namespace metaroce_sim {

unsigned Flows::Add(unsigned src, unsigned dst, uint64_t bytes, ns3::Time start)
{
	Flow fl;

	if (src == dst || src >= f_.apps.size() || dst >= f_.apps.size())
		throw std::invalid_argument("a flow needs two hosts of the fabric");
	if (at_ + message_ > f_.apps[src]->MemLen() || at_ + message_ > f_.apps[dst]->MemLen())
		throw std::invalid_argument("a host's region is too small for the flows' block");
	fl.src = src;
	fl.dst = dst;
	fl.bytes = bytes ? bytes : UINT64_MAX;
	flows_.push_back(fl);
	sized_ += bytes != 0;
	unsigned i = (unsigned)flows_.size() - 1;

	ns3::Simulator::Schedule(start - ns3::Simulator::Now(), &Flows::Begin, this, i);
	return i;
}

void Flows::Begin(unsigned i)
{
	Flow &fl = flows_[i];
	Host &a = *f_.apps[fl.src], &b = *f_.apps[fl.dst];

	/* the pair in the seed too: two Flows' i-th flows draw different paths and planes */
	fl.out = a.Connect(b, f_.paths_per_plane,
			   0xf10 + i + ((uint64_t)fl.src << 40) + ((uint64_t)fl.dst << 20), &fl.in);
	fl.out->on_complete = [this, i](bool, const mrc_completion &wc) {
		Flow &me = flows_[i];

		if (wc.status != MRC_WC_SUCCESS) {
			failures_++;
			return;
		}
		me.completed += message_;
		if (me.completed >= me.bytes) {
			me.finish = ns3::Simulator::Now();
			if (++done_ == sized_ && all_done_)
				all_done_();
			return;
		}
		PostOne(i);
	};
	for (unsigned k = 0; k < depth_; k++)
		PostOne(i);
}

void Flows::PostOne(unsigned i)
{
	Flow &fl = flows_[i];
	Host &a = *f_.apps[fl.src], &b = *f_.apps[fl.dst];
	mrc_send_wr wr = {};

	if (fl.posted >= fl.bytes)
		return;
	wr.wr_id = fl.posted / message_;
	wr.opcode = MRC_WR_WRITE;
	wr.flags = MRC_SEND_SIGNALED;
	wr.num_sge = 1;
	wr.sge[0].addr = a.Addr() + at_;
	wr.sge[0].length = message_;
	wr.raddr = b.Addr() + at_;
	wr.rkey = b.Key();
	fl.posted += message_;
	failures_ += a.PostSend(fl.out, wr) != 0;
}

uint64_t Flows::Placed(unsigned i) const
{
	const Flow &fl = flows_[i];

	return fl.in ? mrc_conn_stats(fl.in->conn)->rx_placed_bytes : 0;
}

} // namespace metaroce_sim
