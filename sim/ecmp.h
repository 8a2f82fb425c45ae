/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * A switch's forwarding: routes to each host address, several next hops where the fabric has
 * several, one chosen per flow by a hash of the 5-tuple, as a switch's ECMP does (ns-3's own
 * ECMP picks at random per packet, which would spread one MetaRoCE path over every route and
 * make its source port meaningless). Each switch hashes with its own salt, so the choices of
 * two tiers are not the same choice.
 */
#ifndef METAROCE_SIM_ECMP_H
#define METAROCE_SIM_ECMP_H

#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include <ns3/ipv4-routing-helper.h>
#include <ns3/ipv4-routing-protocol.h>

namespace metaroce_sim {

class EcmpRouting : public ns3::Ipv4RoutingProtocol {
public:
	static ns3::TypeId GetTypeId();

	/* Packets to dst leave by interface, to gateway: one of dst's routes. */
	void AddRoute(ns3::Ipv4Address dst, uint32_t interface, ns3::Ipv4Address gateway);
	void SetSalt(uint32_t salt) { salt_ = salt; }
	/* Tags each packet it forwards with its ingress interface (IngressTag), for PFC. */
	void SetTagIngress(bool on) { tag_ingress_ = on; }
	/* Packets forwarded (this switch's), and those it had no route for. */
	uint64_t Forwarded() const { return forwarded_; }
	uint64_t Unroutable() const { return unroutable_; }

	ns3::Ptr<ns3::Ipv4Route> RouteOutput(ns3::Ptr<ns3::Packet> p, const ns3::Ipv4Header &header,
					     ns3::Ptr<ns3::NetDevice> oif,
					     ns3::Socket::SocketErrno &sockerr) override;
	bool RouteInput(ns3::Ptr<const ns3::Packet> p, const ns3::Ipv4Header &header,
			ns3::Ptr<const ns3::NetDevice> idev, UnicastForwardCallback ucb,
			MulticastForwardCallback mcb, LocalDeliverCallback lcb,
			ErrorCallback ecb) override;
	void NotifyInterfaceUp(uint32_t) override {}
	void NotifyInterfaceDown(uint32_t) override {}
	void NotifyAddAddress(uint32_t, ns3::Ipv4InterfaceAddress) override {}
	void NotifyRemoveAddress(uint32_t, ns3::Ipv4InterfaceAddress) override {}
	void SetIpv4(ns3::Ptr<ns3::Ipv4> ipv4) override { ipv4_ = ipv4; }
	void PrintRoutingTable(ns3::Ptr<ns3::OutputStreamWrapper> stream,
			       ns3::Time::Unit unit) const override;

private:
	void DoDispose() override;

	ns3::Ptr<ns3::Ipv4> ipv4_;
	std::map<uint32_t, std::vector<std::pair<uint32_t, ns3::Ipv4Address>>> routes_;
	uint32_t salt_ = 0;
	bool tag_ingress_ = false;
	uint64_t forwarded_ = 0, unroutable_ = 0;
};

/* What InternetStackHelper installs on a switch. */
class EcmpRoutingHelper : public ns3::Ipv4RoutingHelper {
public:
	EcmpRoutingHelper *Copy() const override { return new EcmpRoutingHelper(*this); }
	ns3::Ptr<ns3::Ipv4RoutingProtocol> Create(ns3::Ptr<ns3::Node> node) const override;
};

} // namespace metaroce_sim

#endif
