/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
#include "collective.h"

#include <cstdio>
#include <stdexcept>

#include <ns3/simulator.h>

namespace metaroce_sim {

RingAllReduce::RingAllReduce(Fabric &f, uint32_t bytes, uint64_t at, std::function<void()> done)
	: f_(f), bytes_(bytes), chunk_(0), at_(at), done_(std::move(done)), hosts_(f.apps.size())
{
	unsigned n = (unsigned)hosts_.size();

	if (n < 2 || !bytes || bytes % n)
		throw std::invalid_argument("a ring all-reduce needs 2 hosts and bytes a multiple "
					    "of their count");
	chunk_ = bytes / n;
	for (unsigned h = 0; h < n; h++)
		if (at + 3ull * bytes > f.apps[h]->MemLen())
			throw std::invalid_argument("a host's region is too small for the "
						    "all-reduce");
}

/* Host h's byte i: a hash of both, so the sums over the hosts are no function of the offset
 * a chunk sits at (an affine pattern summed over a power of two of hosts repeats every chunk,
 * and a chunk reduced right but placed at another's offset would pass). */
uint8_t RingAllReduce::Input(unsigned h, uint32_t i)
{
	uint32_t x = (h + 1) * 0x9e3779b1u ^ i * 0x85ebca6bu;

	x ^= x >> 15;
	x *= 0x2c1b3c6du;
	x ^= x >> 12;
	return (uint8_t)(x >> 8);
}

/* Reduce-scatter step s (s < n - 1) sends chunk h - s; all-gather step s sends chunk
 * h + 1 - (s - (n - 1)), the one completed last. */
uint64_t RingAllReduce::Chunk(unsigned h, unsigned step) const
{
	unsigned n = (unsigned)hosts_.size();
	unsigned c = step < n - 1 ? (h + n - step) % n : (h + 1 + n - (step - (n - 1))) % n;

	return (uint64_t)c * chunk_;
}

void RingAllReduce::Start()
{
	unsigned n = (unsigned)hosts_.size();

	start_ = ns3::Simulator::Now();
	for (unsigned h = 0; h < n; h++) {
		Member &m = hosts_[h];

		m.host = PeekPointer(f_.apps[h]);
		for (uint32_t i = 0; i < bytes_; i++)
			m.host->Mem()[at_ + i] = Input(h, i);
	}
	for (unsigned h = 0; h < n; h++) {
		Member &m = hosts_[h], &next = hosts_[(h + 1) % n];

		/* a receive posted for every step at once */
		m.out = m.host->Connect(*next.host, 4, 0xa11 + h, &next.in,
					[n](mrc_conn_config &c) {
						while (c.rq_depth < 2 * (n - 1))
							c.rq_depth *= 2;
					});
		m.out->on_complete = [this](bool, const mrc_completion &wc) {
			failures_ += wc.status != MRC_WC_SUCCESS;
		};
		next.in->on_complete = [this, h, n](bool recv, const mrc_completion &wc) {
			if (recv)
				Arrived((h + 1) % n, wc);
		};
	}
	for (unsigned h = 0; h < n; h++)
		for (unsigned s = 0; s < 2 * (n - 1); s++) {
			mrc_recv_wr r = {};

			r.wr_id = s;
			r.num_sge = 1;
			r.sge[0].addr = hosts_[h].host->Addr() + at_ + bytes_ +
					(uint64_t)s * chunk_;
			r.sge[0].length = chunk_;
			failures_ += hosts_[h].host->PostRecv(hosts_[h].in, r) != 0;
		}
	for (unsigned h = 0; h < n; h++)
		Send(h, 0);
}

void RingAllReduce::Send(unsigned h, unsigned step)
{
	Member &m = hosts_[h];
	mrc_send_wr wr = {};

	wr.wr_id = step;
	wr.opcode = MRC_WR_SEND;
	wr.flags = MRC_SEND_SIGNALED;
	wr.num_sge = 1;
	wr.sge[0].addr = m.host->Addr() + at_ + Chunk(h, step);
	wr.sge[0].length = chunk_;
	failures_ += m.host->PostSend(m.out, wr) != 0;
}

/* Host h received step wc.wr_id from h - 1: into its chunk (added, or copied once reduced);
 * then its own next step goes. */
void RingAllReduce::Arrived(unsigned h, const mrc_completion &wc)
{
	unsigned n = (unsigned)hosts_.size(), step = (unsigned)wc.wr_id;
	Member &m = hosts_[h];

	if (wc.status != MRC_WC_SUCCESS || wc.byte_len != chunk_ || step != m.received) {
		failures_++;
		return;
	}
	const uint8_t *in = m.host->Mem() + at_ + bytes_ + (uint64_t)step * chunk_;
	uint8_t *mine = m.host->Mem() + at_ + Chunk((h + n - 1) % n, step);

	for (uint32_t i = 0; i < chunk_; i++)
		mine[i] = step < n - 1 ? (uint8_t)(mine[i] + in[i]) : in[i];
	m.received++;
	if (step + 1 < 2 * (n - 1)) {
		Send(h, step + 1);
		return;
	}
	if (++finished_ == n) {
		end_ = ns3::Simulator::Now();
		if (done_)
			done_();
	}
}

bool RingAllReduce::Verify(std::string *why) const
{
	unsigned n = (unsigned)hosts_.size();

	if (!hosts_[0].host) {
		*why = "never started";
		return false;
	}
	for (unsigned h = 0; h < n; h++)
		for (uint32_t i = 0; i < bytes_; i++) {
			uint8_t want = 0;

			for (unsigned k = 0; k < n; k++)
				want = (uint8_t)(want + Input(k, i));
			if (hosts_[h].host->Mem()[at_ + i] != want) {
				char buf[96];

				snprintf(buf, sizeof(buf), "host %u byte %u is %u, not %u", h, i,
					 hosts_[h].host->Mem()[at_ + i], want);
				*why = buf;
				return false;
			}
		}
	return true;
}

} // namespace metaroce_sim
