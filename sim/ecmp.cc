/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
#include "ecmp.h"
#include "queue.h"

#include <ostream>

#include <ns3/ipv4-route.h>
#include <ns3/ipv4.h>
#include <ns3/node.h>
#include <ns3/output-stream-wrapper.h>
#include <ns3/packet.h>

namespace metaroce_sim {

using namespace ns3;

namespace {

/* A flow's hash: addresses, protocol, and for UDP and TCP the two ports (the first four
 * bytes of the transport header, which the packet begins with here). */
uint32_t FlowHash(Ptr<const Packet> p, const Ipv4Header &h, uint32_t salt)
{
	uint8_t ports[4] = {};
	uint64_t x = ((uint64_t)h.GetSource().Get() << 32 | h.GetDestination().Get()) ^
		     ((uint64_t)h.GetProtocol() << 56) ^ salt;

	/* a fragmented datagram's fragments stay together: no ports for any of them */
	if ((h.GetProtocol() == 17 || h.GetProtocol() == 6) && p->GetSize() >= 4 &&
	    !h.GetFragmentOffset() && h.IsLastFragment()) {
		p->CopyData(ports, 4);
		x ^= (uint64_t)((uint32_t)ports[0] << 24 | (uint32_t)ports[1] << 16 |
				(uint32_t)ports[2] << 8 | ports[3])
		     << 16;
	}
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return (uint32_t)(x ^ (x >> 31));
}

} // namespace

TypeId EcmpRouting::GetTypeId()
{
	static TypeId tid = TypeId("metaroce_sim::EcmpRouting")
				    .SetParent<Ipv4RoutingProtocol>()
				    .AddConstructor<EcmpRouting>();
	return tid;
}

void EcmpRouting::DoDispose()
{
	ipv4_ = nullptr;
	Ipv4RoutingProtocol::DoDispose();
}

void EcmpRouting::AddRoute(Ipv4Address dst, uint32_t interface, Ipv4Address gateway)
{
	routes_[dst.Get()].push_back({ interface, gateway });
}

Ptr<Ipv4Route> EcmpRouting::RouteOutput(Ptr<Packet>, const Ipv4Header &, Ptr<NetDevice>,
					Socket::SocketErrno &sockerr)
{
	sockerr = Socket::ERROR_NOROUTETOHOST; /* a switch sends nothing of its own */
	return nullptr;
}

bool EcmpRouting::RouteInput(Ptr<const Packet> p, const Ipv4Header &header,
			     Ptr<const NetDevice> idev, UnicastForwardCallback ucb,
			     MulticastForwardCallback, LocalDeliverCallback lcb, ErrorCallback)
{
	int32_t iif = ipv4_->GetInterfaceForDevice(idev);

	if (ipv4_->IsDestinationAddress(header.GetDestination(), (uint32_t)iif)) {
		if (lcb.IsNull())
			return false;
		lcb(p, header, (uint32_t)iif);
		return true;
	}
	auto it = routes_.find(header.GetDestination().Get());

	if (it == routes_.end()) {
		unroutable_++;
		return false;
	}
	const auto &hop = it->second[FlowHash(p, header, salt_) % it->second.size()];
	Ptr<Ipv4Route> r = Create<Ipv4Route>();

	r->SetDestination(header.GetDestination());
	r->SetGateway(hop.second);
	r->SetSource(ipv4_->GetAddress(hop.first, 0).GetLocal());
	r->SetOutputDevice(ipv4_->GetNetDevice(hop.first));
	forwarded_++;
	if (tag_ingress_) {
		IngressTag tag;

		tag.iface = (uint32_t)iif;
		p->AddPacketTag(tag);
	}
	ucb(r, p, header);
	return true;
}

void EcmpRouting::PrintRoutingTable(Ptr<OutputStreamWrapper> stream, Time::Unit) const
{
	std::ostream &os = *stream->GetStream();

	for (const auto &r : routes_) {
		os << Ipv4Address(r.first) << ":";
		for (const auto &hop : r.second)
			os << " " << hop.second << " (if " << hop.first << ")";
		os << "\n";
	}
}

Ptr<Ipv4RoutingProtocol> EcmpRoutingHelper::Create(Ptr<Node>) const
{
	return CreateObject<EcmpRouting>();
}

} // namespace metaroce_sim
