/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Collectives over the simulated fabric, their reductions really computed, so their result
 * can be checked byte for byte; each one's completion time is its last host's.
 *
 * The ring all-reduce: each host's buffer in N chunks; in N - 1 reduce-scatter steps host h
 * SENDs chunk h - s to h + 1, which adds it into its own, then in N - 1 all-gather steps the
 * reduced chunks go round and are copied; a step is sent when the one before it arrived.
 * Recursive doubling (N a power of two): in step s host h and h xor 2^s SEND each other their
 * whole buffer and both add; a step goes when the one before it has arrived and its own SEND
 * has completed (a send's bytes are read as its packets leave). All-to-all: every host WRITEs
 * a block of its own to every other host, all at once, on a QP a pair.
 */
#ifndef METAROCE_SIM_COLLECTIVE_H
#define METAROCE_SIM_COLLECTIVE_H

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <ns3/nstime.h>

#include "fabric.h"

namespace metaroce_sim {

/* What every collective shows: its completion, its result checked, its failures. */
class Collective {
public:
	virtual ~Collective() = default;
	/* Inputs written, QPs connected, receives posted, the first work posted. */
	virtual void Start() = 0;
	/* Every host holds what it should; else why. */
	virtual bool Verify(std::string *why) const = 0;
	bool Done() const { return finished_ == members_; }
	unsigned Failures() const { return failures_; }
	ns3::Time Elapsed() const { return end_ - start_; }
	/* Bytes each host sends in all (for goodput: these over Elapsed(), per host). */
	uint64_t BytesSentPerHost() const { return sent_per_host_; }

protected:
	Collective(Fabric &f, uint64_t at, std::function<void()> done, unsigned members)
		: f_(f), at_(at), done_(std::move(done)), members_(members) {}
	void Finished(); /* one member has its result */
	/* Every host's region holds `bytes` from at_; else invalid_argument naming `what`. */
	void RequireRegion(uint64_t bytes, const char *what) const;
	void Post(Host &h, Qp *qp, uint8_t opcode, uint64_t wr_id, uint64_t local, uint32_t len,
		  uint64_t remote = 0, uint32_t rkey = 0);
	void PostRecv(Host &h, Qp *qp, uint64_t wr_id, uint64_t local, uint32_t len);
	/* Host h's input byte i: a hash of both. */
	static uint8_t Input(unsigned h, uint32_t i);
	/* Each of the hosts holds at `at` the byte-wise sum of every host's input, bytes long. */
	bool VerifySum(uint32_t bytes, std::string *why) const;

	Fabric &f_;
	uint64_t at_;
	std::function<void()> done_;
	unsigned members_, finished_ = 0, failures_ = 0;
	uint64_t sent_per_host_ = 0;
	ns3::Time start_, end_;
};

class RingAllReduce : public Collective {
public:
	/*
	 * Over every host of f, bytes each (a multiple of the host count), in each host's
	 * region from byte `at`: the buffer, then a slot a step for what arrives (room for
	 * 3 x bytes). done runs when the last host has its result.
	 */
	RingAllReduce(Fabric &f, uint32_t bytes, uint64_t at, std::function<void()> done);
	void Start() override;
	bool Verify(std::string *why) const override { return VerifySum(bytes_, why); }

private:
	struct Member {
		Qp *out = nullptr, *in = nullptr; /* to h + 1, from h - 1 */
		unsigned received = 0;
	};
	uint64_t Chunk(unsigned h, unsigned step) const; /* the chunk step sends, its offset */
	void Send(unsigned h, unsigned step);
	void Arrived(unsigned h, const mrc_completion &wc);

	uint32_t bytes_, chunk_;
	std::vector<Member> hosts_;
};

class RecursiveDoublingAllReduce : public Collective {
public:
	/* As the ring's, over a power of two of hosts: room for (1 + log2 N) x bytes. */
	RecursiveDoublingAllReduce(Fabric &f, uint32_t bytes, uint64_t at,
				   std::function<void()> done);
	void Start() override;
	bool Verify(std::string *why) const override { return VerifySum(bytes_, why); }

private:
	struct Member {
		std::vector<Qp *> to; /* to its partner of each step */
		unsigned step = 0;
		bool sent = false;	 /* this step's SEND has completed */
		uint32_t arrived = 0;	 /* the steps whose partner's SEND has arrived */
	};
	void Send(unsigned h);
	void Progress(unsigned h); /* the step ends when both its halves have */

	uint32_t bytes_;
	unsigned steps_;
	std::vector<Member> hosts_;
};

class AllToAll : public Collective {
public:
	/* Every host WRITEs `block` bytes to every other: from `at` in its region its N
	 * outgoing blocks, then its N incoming ones (room for 2 x N x block). */
	AllToAll(Fabric &f, uint32_t block, uint64_t at, std::function<void()> done);
	void Start() override;
	bool Verify(std::string *why) const override;

private:
	uint32_t block_;
	std::vector<unsigned> pending_; /* each host's WRITEs not yet completed */
};

} // namespace metaroce_sim

#endif
