/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Point-to-point flows over the simulated fabric, for what collectives do not show: a
 * permutation, an N:1 incast, a victim beside it, long-lived flows through a failure. A flow
 * is one QP pair; its sender keeps `depth` WRITEs of `message` bytes in flight, from one block
 * of its region into one block of the receiver's, again and again, until it has posted `bytes`
 * (0: until the run ends); what it moved is the receiver's count of bytes placed. Every flow
 * uses the same block of each host (its bytes are not checked: metaroce-sim-check does that),
 * so a host takes part in any number of flows.
 */
#ifndef METAROCE_SIM_FLOWS_H
#define METAROCE_SIM_FLOWS_H

#include <cstdint>
#include <functional>
#include <vector>

#include <ns3/nstime.h>

#include "fabric.h"

namespace metaroce_sim {

class Flows {
public:
	/* The block at `at` of every host's region, message bytes. */
	Flows(Fabric &f, uint32_t message, unsigned depth, uint64_t at)
		: f_(f), message_(message), depth_(depth), at_(at) {}

	/* A flow from host src to host dst, started at `start`; returns its index. */
	unsigned Add(unsigned src, unsigned dst, uint64_t bytes, ns3::Time start);

	/* Bytes flow i's receiver has placed so far (retransmissions not counted twice). */
	uint64_t Placed(unsigned i) const;
	size_t Count() const { return flows_.size(); }
	bool Done(unsigned i) const { return flows_[i].completed >= flows_[i].bytes; }
	/* Every flow with a size has moved it. */
	bool AllDone() const { return done_ == sized_; }
	ns3::Time Finish(unsigned i) const { return flows_[i].finish; }
	unsigned Failures() const { return failures_; }
	/* Called when every flow with a size has moved it. */
	void OnAllDone(std::function<void()> cb) { all_done_ = std::move(cb); }

private:
	struct Flow {
		unsigned src = 0, dst = 0;
		Qp *out = nullptr, *in = nullptr;
		uint64_t bytes = 0, posted = 0, completed = 0; /* bytes 0: unbounded */
		ns3::Time finish;
	};
	void Begin(unsigned i);
	void PostOne(unsigned i);

	Fabric &f_;
	uint32_t message_;
	unsigned depth_;
	uint64_t at_;
	std::vector<Flow> flows_;
	size_t done_ = 0, sized_ = 0;
	unsigned failures_ = 0;
	std::function<void()> all_done_;
};

} // namespace metaroce_sim

#endif
