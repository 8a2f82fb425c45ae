/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Every egress queue of the simulated fabric, a switch's or a host's NIC's: one FIFO that
 * marks CE every ECN-capable packet that finds ecn_k or more queued (a step, DCTCP style; 0:
 * never), drops what finds it full, and can be paused by the next hop's PFC.
 *
 * PFC, for the lossless RoCEv2 baseline (one priority: every packet of the fabric is RDMA
 * traffic, its ACKs included). A switch counts, for each of its ingress links, the bytes it
 * holds that came in on it; past xoff it pauses that link's sender, whose queue then sends
 * nothing until, below xon, the switch resumes it. PAUSE and RESUME take the link's delay to
 * arrive, during which the sender goes on: the headroom above xoff that an ingress needs to
 * lose nothing is two delays of the link's rate and two packets; Pfc counts the bytes held past
 * it (a switch with a finite buffer would have dropped them). Hosts never pause their switch
 * (a NIC drains into memory).
 */
#ifndef METAROCE_SIM_QUEUE_H
#define METAROCE_SIM_QUEUE_H

#include <cstdint>
#include <vector>

#include <ns3/nstime.h>
#include <ns3/queue-disc.h>
#include <ns3/simple-ref-count.h>
#include <ns3/tag.h>

namespace metaroce_sim {

class Pfc;

class EgressQueue : public ns3::QueueDisc {
public:
	static ns3::TypeId GetTypeId();
	EgressQueue();

	void SetEcnThreshold(uint32_t packets) { ecn_k_ = packets; }
	/* The switch this queue belongs to, when it does PFC. */
	void SetPfc(ns3::Ptr<Pfc> pfc) { pfc_ = pfc; }
	/* Pauses or resumes this queue (its link's far end says so, PFC). */
	void SetPaused(bool paused);
	uint32_t MaxPackets() const { return max_packets_; } /* the deepest it has been */

private:
	bool DoEnqueue(ns3::Ptr<ns3::QueueDiscItem> item) override;
	ns3::Ptr<ns3::QueueDiscItem> DoDequeue() override;
	bool CheckConfig() override;
	void InitializeParams() override {}

	uint32_t ecn_k_ = 0, max_packets_ = 0;
	bool paused_ = false;
	ns3::Ptr<Pfc> pfc_;
};

/* A switch's PFC: what each ingress interface holds, and its sender's queue to pause. */
class Pfc : public ns3::SimpleRefCount<Pfc> {
public:
	/* xoff, xon: bytes an ingress holds from which its sender is paused, below which it is
	 * resumed; headroom: what it may hold above xoff before PFC counts it as failed. */
	Pfc(uint32_t xoff, uint32_t xon, uint32_t headroom) : xoff_(xoff), xon_(xon),
							       headroom_(headroom) {}

	/* Ingress interface `iface` arrives from `sender` (the far end's egress queue), whose
	 * PAUSE and RESUME take `delay`. */
	void AddIngress(uint32_t iface, ns3::Ptr<EgressQueue> sender, ns3::Time delay);
	/* A packet of size bytes that came in on iface is held, or has left. */
	void Hold(uint32_t iface, uint32_t size);
	void Release(uint32_t iface, uint32_t size);

	uint64_t Pauses() const { return pauses_; }	     /* PAUSE frames sent */
	uint64_t OverHeadroom() const { return over_; }	     /* bytes held beyond xoff + headroom */
	/* Lets go of the senders' queues, which hold this Pfc: the fabric is being freed. */
	void Clear() { ingress_.clear(); }

private:
	struct Ingress {
		ns3::Ptr<EgressQueue> sender;
		ns3::Time delay;
		uint64_t held = 0;
		bool paused = false;
	};
	void Tell(Ingress &in, bool pause);

	uint32_t xoff_, xon_, headroom_;
	std::vector<Ingress> ingress_; /* by interface */
	uint64_t pauses_ = 0, over_ = 0;
};

/* Which interface of its switch a packet came in on: set by the switch's routing, read and
 * taken off by the egress queue it waits in. */
class IngressTag : public ns3::Tag {
public:
	static ns3::TypeId GetTypeId();
	ns3::TypeId GetInstanceTypeId() const override { return GetTypeId(); }
	uint32_t GetSerializedSize() const override { return 4; }
	void Serialize(ns3::TagBuffer b) const override { b.WriteU32(iface); }
	void Deserialize(ns3::TagBuffer b) override { iface = b.ReadU32(); }
	void Print(std::ostream &os) const override { os << "ingress=" << iface; }

	uint32_t iface = 0;
};

} // namespace metaroce_sim

#endif
