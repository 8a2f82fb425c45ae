/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
#include "queue.h"

#include <algorithm>

#include <ns3/drop-tail-queue.h>
#include <ns3/packet.h>
#include <ns3/simulator.h>

namespace metaroce_sim {

using namespace ns3;

/* found by name when a helper makes one */
NS_OBJECT_ENSURE_REGISTERED(EgressQueue);

TypeId EgressQueue::GetTypeId()
{
	static TypeId tid =
		TypeId("metaroce_sim::EgressQueue")
			.SetParent<QueueDisc>()
			.AddConstructor<EgressQueue>()
			.AddAttribute("MaxSize", "The most the queue holds",
				      QueueSizeValue(QueueSize("1000p")),
				      MakeQueueSizeAccessor(&QueueDisc::SetMaxSize,
							    &QueueDisc::GetMaxSize),
				      MakeQueueSizeChecker());
	return tid;
}

EgressQueue::EgressQueue() : QueueDisc(QueueDiscSizePolicy::SINGLE_INTERNAL_QUEUE) {}

bool EgressQueue::CheckConfig()
{
	if (GetNQueueDiscClasses() || GetNPacketFilters())
		return false;
	if (!GetNInternalQueues())
		AddInternalQueue(CreateObjectWithAttributes<DropTailQueue<QueueDiscItem>>(
			"MaxSize", QueueSizeValue(GetMaxSize())));
	return GetNInternalQueues() == 1;
}

bool EgressQueue::DoEnqueue(Ptr<QueueDiscItem> item)
{
	IngressTag tag;

	if (GetCurrentSize() + item > GetMaxSize()) {
		DropBeforeEnqueue(item, "queue full");
		return false;
	}
	if (ecn_k_ && GetNPackets() >= ecn_k_)
		Mark(item, "ECN threshold"); /* ECT packets only: the others pass unmarked */
	if (!GetInternalQueue(0)->Enqueue(item))
		return false;
	if (pfc_ && item->GetPacket()->PeekPacketTag(tag))
		pfc_->Hold(tag.iface, item->GetSize());
	if (GetNPackets() > max_packets_)
		max_packets_ = GetNPackets();
	return true;
}

Ptr<QueueDiscItem> EgressQueue::DoDequeue()
{
	IngressTag tag;

	if (paused_)
		return nullptr;
	Ptr<QueueDiscItem> item = GetInternalQueue(0)->Dequeue();

	/* the next switch tags it afresh */
	if (item && item->GetPacket()->RemovePacketTag(tag) && pfc_)
		pfc_->Release(tag.iface, item->GetSize());
	return item;
}

void EgressQueue::SetPaused(bool paused)
{
	if (paused == paused_)
		return;
	paused_ = paused;
	if (!paused)
		Run(); /* what waited goes now, if the device has room */
}

void Pfc::AddIngress(uint32_t iface, Ptr<EgressQueue> sender, Time delay)
{
	if (ingress_.size() <= iface)
		ingress_.resize(iface + 1);
	ingress_[iface].sender = sender;
	ingress_[iface].delay = delay;
}

void Pfc::Tell(Ingress &in, bool pause)
{
	in.paused = pause;
	pauses_ += pause;
	Simulator::Schedule(in.delay, &EgressQueue::SetPaused, in.sender, pause);
}

void Pfc::Hold(uint32_t iface, uint32_t size)
{
	if (iface >= ingress_.size() || !ingress_[iface].sender)
		return; /* from a host's own stack: nothing to pause */
	Ingress &in = ingress_[iface];

	in.held += size;
	if (in.held > (uint64_t)xoff_ + headroom_)
		over_ += std::min<uint64_t>(size, in.held - xoff_ - headroom_);
	if (!in.paused && in.held >= xoff_)
		Tell(in, true);
}

void Pfc::Release(uint32_t iface, uint32_t size)
{
	if (iface >= ingress_.size() || !ingress_[iface].sender)
		return;
	Ingress &in = ingress_[iface];

	in.held -= size < in.held ? size : in.held;
	if (in.paused && in.held < xon_)
		Tell(in, false);
}

TypeId IngressTag::GetTypeId()
{
	static TypeId tid = TypeId("metaroce_sim::IngressTag")
				    .SetParent<Tag>()
				    .AddConstructor<IngressTag>();
	return tid;
}

} // namespace metaroce_sim
