/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Collectives over the simulated fabric, their reductions really computed, so their result
 * can be checked byte for byte. So far the ring all-reduce: each host's buffer in N chunks;
 * in N - 1 reduce-scatter steps host h SENDs chunk h - s to h + 1, which adds it into its
 * own, then in N - 1 all-gather steps the reduced chunks go round and are copied; a step is
 * sent when the one before it arrived. Its completion time is the last host's.
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

class RingAllReduce {
public:
	/*
	 * Over every host of f, bytes each (a multiple of the host count), in each host's
	 * region from byte `at`: the buffer, then a slot a step for what arrives (room for
	 * 3 x bytes). done runs when the last host has its result.
	 */
	RingAllReduce(Fabric &f, uint32_t bytes, uint64_t at, std::function<void()> done);

	/* Each host's buffer filled (host h's byte i a pattern of h and i), the ring's QPs
	 * connected, every receive posted, the first steps sent. */
	void Start();
	/* Every host holds the sum, byte by byte mod 256, of every host's buffer; else why. */
	bool Verify(std::string *why) const;
	bool Done() const { return finished_ == hosts_.size(); }
	unsigned Failures() const { return failures_; }
	ns3::Time Elapsed() const { return end_ - start_; }

private:
	struct Member {
		Host *host = nullptr;
		Qp *out = nullptr, *in = nullptr; /* to h + 1, from h - 1 */
		unsigned received = 0;
	};
	uint64_t Chunk(unsigned h, unsigned step) const; /* the chunk step sends, its offset */
	void Send(unsigned h, unsigned step);
	void Arrived(unsigned h, const mrc_completion &wc);
	static uint8_t Input(unsigned h, uint32_t i);

	Fabric &f_;
	uint32_t bytes_, chunk_;
	uint64_t at_;
	std::function<void()> done_;
	std::vector<Member> hosts_;
	unsigned finished_ = 0, failures_ = 0;
	ns3::Time start_, end_;
};

} // namespace metaroce_sim

#endif
