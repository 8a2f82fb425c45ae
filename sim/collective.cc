/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
#include "collective.h"

#include <cstdio>
#include <stdexcept>

#include <ns3/simulator.h>

namespace metaroce_sim {

namespace {

/* A receive queue deep enough for `recvs` receives posted at once. */
std::function<void(mrc_conn_config &)> RqDepth(unsigned recvs)
{
	return [recvs](mrc_conn_config &c) {
		while (c.rq_depth < recvs)
			c.rq_depth *= 2;
	};
}

} // namespace

void Collective::RequireRegion(uint64_t bytes, const char *what) const
{
	for (const auto &h : f_.apps)
		if (at_ + bytes > h->MemLen())
			throw std::invalid_argument(std::string("a host's region is too small for "
								"the ") + what);
}

void Collective::Finished()
{
	if (++finished_ < members_)
		return;
	end_ = ns3::Simulator::Now();
	if (done_)
		done_();
}

void Collective::Post(Host &h, Qp *qp, uint8_t opcode, uint64_t wr_id, uint64_t local,
		      uint32_t len, uint64_t remote, uint32_t rkey)
{
	mrc_send_wr wr = {};

	wr.wr_id = wr_id;
	wr.opcode = opcode;
	wr.flags = MRC_SEND_SIGNALED;
	wr.num_sge = 1;
	wr.sge[0].addr = h.Addr() + local;
	wr.sge[0].length = len;
	wr.raddr = remote;
	wr.rkey = rkey;
	failures_ += h.PostSend(qp, wr) != 0;
}

void Collective::PostRecv(Host &h, Qp *qp, uint64_t wr_id, uint64_t local, uint32_t len)
{
	mrc_recv_wr r = {};

	r.wr_id = wr_id;
	r.num_sge = 1;
	r.sge[0].addr = h.Addr() + local;
	r.sge[0].length = len;
	failures_ += h.PostRecv(qp, r) != 0;
}

/* A hash of both, so the sums over the hosts are no function of the offset a chunk sits at
 * (an affine pattern summed over a power of two of hosts repeats every chunk, and a chunk
 * reduced right but placed at another's offset would pass). */
uint8_t Collective::Input(unsigned h, uint32_t i)
{
	uint32_t x = (h + 1) * 0x9e3779b1u ^ i * 0x85ebca6bu;

	x ^= x >> 15;
	x *= 0x2c1b3c6du;
	x ^= x >> 12;
	return (uint8_t)(x >> 8);
}

bool Collective::VerifySum(uint32_t bytes, std::string *why) const
{
	const unsigned n = (unsigned)f_.apps.size();
	std::vector<uint8_t> want(bytes);

	if (!Done()) {
		*why = "not finished";
		return false;
	}
	for (unsigned k = 0; k < n; k++)
		for (uint32_t i = 0; i < bytes; i++)
			want[i] = (uint8_t)(want[i] + Input(k, i));
	for (unsigned h = 0; h < n; h++)
		for (uint32_t i = 0; i < bytes; i++)
			if (f_.apps[h]->Mem()[at_ + i] != want[i]) {
				char buf[96];

				snprintf(buf, sizeof(buf), "host %u byte %u is %u, not %u", h, i,
					 f_.apps[h]->Mem()[at_ + i], want[i]);
				*why = buf;
				return false;
			}
	return true;
}

RingAllReduce::RingAllReduce(Fabric &f, uint32_t bytes, uint64_t at, std::function<void()> done)
	: Collective(f, at, std::move(done), (unsigned)f.apps.size()), bytes_(bytes), chunk_(0),
	  hosts_(f.apps.size())
{
	unsigned n = members_;

	if (n < 2 || !bytes || bytes % n)
		throw std::invalid_argument("a ring all-reduce needs 2 hosts and bytes a multiple "
					    "of their count");
	chunk_ = bytes / n;
	sent_per_host_ = 2ull * (n - 1) * chunk_;
	RequireRegion(3ull * bytes, "all-reduce");
}

/* Reduce-scatter step s (s < n - 1) sends chunk h - s; all-gather step s sends chunk
 * h + 1 - (s - (n - 1)), the one completed last. */
uint64_t RingAllReduce::Chunk(unsigned h, unsigned step) const
{
	unsigned n = members_;
	unsigned c = step < n - 1 ? (h + n - step) % n : (h + 1 + n - (step - (n - 1))) % n;

	return (uint64_t)c * chunk_;
}

void RingAllReduce::Start()
{
	unsigned n = members_;

	start_ = ns3::Simulator::Now();
	for (unsigned h = 0; h < n; h++)
		for (uint32_t i = 0; i < bytes_; i++)
			f_.apps[h]->Mem()[at_ + i] = Input(h, i);
	for (unsigned h = 0; h < n; h++) {
		Member &m = hosts_[h], &next = hosts_[(h + 1) % n];

		/* a receive posted for every step at once */
		m.out = f_.apps[h]->Connect(*f_.apps[(h + 1) % n], f_.paths_per_plane, 0xa11 + h,
					    &next.in, RqDepth(2 * (n - 1)));
		m.out->on_complete = [this](bool, const mrc_completion &wc) {
			failures_ += wc.status != MRC_WC_SUCCESS;
		};
		next.in->on_complete = [this, h, n](bool recv, const mrc_completion &wc) {
			if (recv)
				Arrived((h + 1) % n, wc);
		};
	}
	for (unsigned h = 0; h < n; h++)
		for (unsigned s = 0; s < 2 * (n - 1); s++)
			PostRecv(*f_.apps[h], hosts_[h].in, s, at_ + bytes_ + (uint64_t)s * chunk_,
				 chunk_);
	for (unsigned h = 0; h < n; h++)
		Send(h, 0);
}

void RingAllReduce::Send(unsigned h, unsigned step)
{
	Post(*f_.apps[h], hosts_[h].out, MRC_WR_SEND, step, at_ + Chunk(h, step), chunk_);
}

/* Host h received step wc.wr_id from h - 1: into its chunk (added, or copied once reduced);
 * then its own next step goes. */
void RingAllReduce::Arrived(unsigned h, const mrc_completion &wc)
{
	unsigned n = members_, step = (unsigned)wc.wr_id;
	Member &m = hosts_[h];
	uint8_t *mem = f_.apps[h]->Mem();

	if (wc.status != MRC_WC_SUCCESS || wc.byte_len != chunk_ || step != m.received) {
		failures_++;
		return;
	}
	const uint8_t *in = mem + at_ + bytes_ + (uint64_t)step * chunk_;
	uint8_t *mine = mem + at_ + Chunk((h + n - 1) % n, step);

	for (uint32_t i = 0; i < chunk_; i++)
		mine[i] = step < n - 1 ? (uint8_t)(mine[i] + in[i]) : in[i];
	m.received++;
	if (step + 1 < 2 * (n - 1))
		Send(h, step + 1);
	else
		Finished();
}

RecursiveDoublingAllReduce::RecursiveDoublingAllReduce(Fabric &f, uint32_t bytes, uint64_t at,
						       std::function<void()> done)
	: Collective(f, at, std::move(done), (unsigned)f.apps.size()), bytes_(bytes), steps_(0),
	  hosts_(f.apps.size())
{
	unsigned n = members_;

	while ((1u << steps_) < n)
		steps_++;
	if (n < 2 || (1u << steps_) != n || !bytes)
		throw std::invalid_argument("recursive doubling needs a power of two of hosts");
	sent_per_host_ = (uint64_t)steps_ * bytes;
	RequireRegion((1ull + steps_) * bytes, "all-reduce");
}

void RecursiveDoublingAllReduce::Start()
{
	unsigned n = members_;

	start_ = ns3::Simulator::Now();
	for (unsigned h = 0; h < n; h++) {
		for (uint32_t i = 0; i < bytes_; i++)
			f_.apps[h]->Mem()[at_ + i] = Input(h, i);
		hosts_[h].to.resize(steps_);
	}
	for (unsigned s = 0; s < steps_; s++)
		for (unsigned h = 0; h < n; h++) {
			unsigned p = h ^ (1u << s);

			if (p < h)
				continue;
			Qp *theirs, *mine = f_.apps[h]->Connect(*f_.apps[p], f_.paths_per_plane,
								 0xd0b + s * n + h, &theirs);

			hosts_[h].to[s] = mine;
			hosts_[p].to[s] = theirs;
			for (unsigned end = 0; end < 2; end++) {
				unsigned me = end ? p : h;
				Qp *q = end ? theirs : mine;

				q->on_complete = [this, me](bool recv, const mrc_completion &wc) {
					Member &m = hosts_[me];

					if (wc.status != MRC_WC_SUCCESS ||
					    (recv && wc.byte_len != bytes_)) {
						failures_++;
						return;
					}
					if (recv)
						m.arrived |= 1u << wc.wr_id;
					else
						m.sent = true;
					Progress(me);
				};
				PostRecv(*f_.apps[me], q, s, at_ + (1ull + s) * bytes_, bytes_);
			}
		}
	for (unsigned h = 0; h < n; h++)
		Send(h);
}

void RecursiveDoublingAllReduce::Send(unsigned h)
{
	Member &m = hosts_[h];

	Post(*f_.apps[h], m.to[m.step], MRC_WR_SEND, m.step, at_, bytes_);
}

void RecursiveDoublingAllReduce::Progress(unsigned h)
{
	Member &m = hosts_[h];
	uint8_t *mem = f_.apps[h]->Mem();

	if (!m.sent || !(m.arrived >> m.step & 1))
		return;
	const uint8_t *in = mem + at_ + (1ull + m.step) * bytes_;

	for (uint32_t i = 0; i < bytes_; i++)
		mem[at_ + i] = (uint8_t)(mem[at_ + i] + in[i]);
	m.sent = false;
	if (++m.step < steps_)
		Send(h);
	else
		Finished();
}

AllToAll::AllToAll(Fabric &f, uint32_t block, uint64_t at, std::function<void()> done)
	: Collective(f, at, std::move(done), (unsigned)f.apps.size()), block_(block),
	  pending_(f.apps.size())
{
	unsigned n = members_;

	if (n < 2 || !block)
		throw std::invalid_argument("an all-to-all needs 2 hosts");
	sent_per_host_ = (uint64_t)(n - 1) * block;
	RequireRegion(2ull * n * block, "all-to-all");
}

void AllToAll::Start()
{
	unsigned n = members_;

	start_ = ns3::Simulator::Now();
	for (unsigned h = 0; h < n; h++) {
		for (uint32_t i = 0; i < n * block_; i++)
			f_.apps[h]->Mem()[at_ + i] = Input(h, i);
		pending_[h] = n - 1;
	}
	/* block j of host i's outgoing ones lands as block i of j's incoming ones */
	for (unsigned i = 0; i < n; i++)
		for (unsigned j = i + 1; j < n; j++) {
			Host &a = *f_.apps[i], &b = *f_.apps[j];
			Qp *bq, *aq = a.Connect(b, f_.paths_per_plane, 0xa2a + i * n + j, &bq);
			const uint64_t in = at_ + (uint64_t)n * block_;

			for (auto side : { std::make_pair(i, aq), std::make_pair(j, bq) })
				side.second->on_complete = [this, h = side.first](
								   bool, const mrc_completion &wc) {
					failures_ += wc.status != MRC_WC_SUCCESS;
					if (!--pending_[h])
						Finished();
				};
			Post(a, aq, MRC_WR_WRITE, j, at_ + (uint64_t)j * block_, block_,
			     b.Addr() + in + (uint64_t)i * block_, b.Key());
			Post(b, bq, MRC_WR_WRITE, i, at_ + (uint64_t)i * block_, block_,
			     a.Addr() + in + (uint64_t)j * block_, a.Key());
		}
}

bool AllToAll::Verify(std::string *why) const
{
	unsigned n = members_;

	if (!Done()) {
		*why = "not finished";
		return false;
	}
	for (unsigned j = 0; j < n; j++)
		for (unsigned i = 0; i < n; i++) {
			const uint8_t *got = f_.apps[j]->Mem() + at_ + (uint64_t)(n + i) * block_;

			for (uint32_t k = 0; i != j && k < block_; k++)
				if (got[k] != Input(i, j * block_ + k)) {
					char buf[96];

					snprintf(buf, sizeof(buf), "host %u's block from %u: byte "
						 "%u wrong", j, i, k);
					*why = buf;
					return false;
				}
		}
	return true;
}

} // namespace metaroce_sim
