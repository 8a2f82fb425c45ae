/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
#include "fabric.h"

#include <cstdio>
#include <stdexcept>

#include <ns3/boolean.h>
#include <ns3/double.h>
#include <ns3/error-model.h>
#include <ns3/internet-stack-helper.h>
#include <ns3/ipv4-address-helper.h>
#include <ns3/ipv4-static-routing-helper.h>
#include <ns3/ipv4.h>
#include <ns3/point-to-point-helper.h>
#include <ns3/pointer.h>
#include <ns3/queue-size.h>
#include <ns3/simulator.h>
#include <ns3/string.h>
#include <ns3/traffic-control-helper.h>
#include <ns3/uinteger.h>

namespace metaroce_sim {

using namespace ns3;

namespace {

/* A link between a and b, numbered as base says: a gets .1, b .2. */
struct Link {
	uint32_t if_a, if_b;
	Ipv4Address addr_a, addr_b;
	NetDeviceContainer devices;
};

/* Every packet arriving at d lost at this rate. */
void LoseAt(Ptr<NetDevice> d, double rate)
{
	Ptr<RateErrorModel> em = CreateObject<RateErrorModel>();

	em->SetAttribute("ErrorRate", DoubleValue(rate));
	em->SetAttribute("ErrorUnit", StringValue("ERROR_UNIT_PACKET"));
	d->SetAttribute("ReceiveErrorModel", PointerValue(em));
}

uint32_t IfOf(Ptr<Node> n, Ptr<NetDevice> d)
{
	return (uint32_t)n->GetObject<Ipv4>()->GetInterfaceForDevice(d);
}

/* tc_a, tc_b: each end's egress queue */
Link Connect(const FabricSpec &spec, PointToPointHelper &p2p, TrafficControlHelper &tc_a,
	     TrafficControlHelper &tc_b, Ptr<Node> a, Ptr<Node> b, const char *base)
{
	NetDeviceContainer d = p2p.Install(a, b);
	Ipv4AddressHelper ip;

	tc_a.Install(d.Get(0));
	tc_b.Install(d.Get(1));
	ip.SetBase(base, "255.255.255.0", "0.0.0.1");
	Ipv4InterfaceContainer ifs = ip.Assign(d);
	for (unsigned end = 0; end < 2 && spec.loss > 0; end++)
		LoseAt(d.Get(end), spec.loss);
	return { IfOf(a, d.Get(0)), IfOf(b, d.Get(1)), ifs.GetAddress(0), ifs.GetAddress(1), d };
}

} // namespace

Fabric BuildFabric(const FabricSpec &spec)
{
	Fabric f;
	PointToPointHelper p2p;
	TrafficControlHelper tc, fifo;
	InternetStackHelper host_stack, switch_stack;
	Ipv4StaticRoutingHelper host_routes;
	const unsigned per_plane = spec.leaves + spec.spines;
	const unsigned per_leaf = (spec.hosts + spec.leaves - 1) / (spec.leaves ? spec.leaves : 1);
	std::vector<std::vector<Ipv4Address>> addrs(spec.hosts);
	char base[32];

	/* (the addresses: a host's last byte, a leaf-spine link's third) */
	if (!spec.hosts || spec.hosts > 255 || !spec.planes || spec.planes > MRC_MAX_PLANES ||
	    !spec.leaves || spec.leaves * spec.spines > 256 || (spec.leaves > 1 && !spec.spines) ||
	    spec.mtu < 576 || spec.mtu > 9216 || !spec.ecn_k || spec.buffer <= spec.ecn_k)
		throw std::invalid_argument("a fabric of that description cannot be built");
	f.plane_links.resize(spec.planes);
	f.hosts.Create(spec.hosts);
	f.switches.Create(spec.planes * per_plane);
	host_stack.SetRoutingHelper(host_routes);
	host_stack.Install(f.hosts);
	switch_stack.SetRoutingHelper(EcmpRoutingHelper());
	switch_stack.Install(f.switches);
	for (unsigned s = 0; s < f.switches.GetN(); s++) {
		Ptr<Ipv4> ip = f.switches.Get(s)->GetObject<Ipv4>();
		Ptr<EcmpRouting> r = DynamicCast<EcmpRouting>(ip->GetRoutingProtocol());

		r->SetSalt(0x9e3779b9u * (s + 1));
		f.routing.push_back(r);
	}
	p2p.SetDeviceAttribute("DataRate", StringValue(spec.rate));
	p2p.SetDeviceAttribute("Mtu", UintegerValue(spec.mtu));
	p2p.SetChannelAttribute("Delay", StringValue(spec.delay));
	/* the queue builds in the queue disc, where it is marked, not in the device */
	p2p.SetQueue("ns3::DropTailQueue<Packet>", "MaxSize", StringValue("1p"));
	/* a switch's egress: RED as a step, on the instantaneous queue (QW 1), not gentle,
	 * both thresholds K, so every packet that finds K queued is marked (forced, and with
	 * ECN and no hard drop a forced drop is a mark) */
	tc.SetRootQueueDisc("ns3::RedQueueDisc", "UseEcn", BooleanValue(true), "UseHardDrop",
			    BooleanValue(false), "Gentle", BooleanValue(false), "Wait",
			    BooleanValue(false), "QW", DoubleValue(1), "MinTh",
			    DoubleValue(spec.ecn_k), "MaxTh", DoubleValue(spec.ecn_k), "MaxSize",
			    QueueSizeValue(QueueSize(QueueSizeUnit::PACKETS, spec.buffer)),
			    "MeanPktSize", UintegerValue(spec.mtu));
	/* a host's own egress: a NIC's queue, which neither marks nor drops what it was given */
	fifo.SetRootQueueDisc("ns3::FifoQueueDisc", "MaxSize",
			      QueueSizeValue(QueueSize(QueueSizeUnit::PACKETS, 100000)));
	for (unsigned p = 0; p < spec.planes; p++) {
		std::vector<std::vector<Link>> up(spec.leaves); /* [leaf][spine] */

		/* this plane's switch i: leaves first, then spines */
		auto sw = [&f, p, per_plane](unsigned i) {
			return f.switches.Get(p * per_plane + i);
		};
		auto rt = [&f, p, per_plane](unsigned i) { return f.routing[p * per_plane + i]; };

		for (unsigned l = 0; l < spec.leaves; l++)
			for (unsigned s = 0; s < spec.spines; s++) {
				snprintf(base, sizeof(base), "11.%u.%u.0", p, l * spec.spines + s);
				up[l].push_back(Connect(spec, p2p, tc, tc, sw(l),
							sw(spec.leaves + s), base));
				f.plane_links[p].Add(up[l].back().devices);
			}
		for (unsigned h = 0; h < spec.hosts; h++) {
			unsigned l = h / per_leaf;
			Ptr<Node> host = f.hosts.Get(h);
			Link link;

			snprintf(base, sizeof(base), "10.%u.%u.0", p, h);
			link = Connect(spec, p2p, fifo, tc, host, sw(l), base);
			f.plane_links[p].Add(link.devices);
			addrs[h].push_back(link.addr_a);
			snprintf(base, sizeof(base), "10.%u.0.0", p);
			host_routes.GetStaticRouting(host->GetObject<Ipv4>())
				->AddNetworkRouteTo(Ipv4Address(base), Ipv4Mask("255.255.0.0"),
						    link.addr_b, link.if_a);
			/* to the host: its leaf straight down; every other leaf up to any
			 * spine; every spine down to its leaf */
			rt(l)->AddRoute(link.addr_a, link.if_b, link.addr_a);
			for (unsigned o = 0; o < spec.leaves; o++)
				for (unsigned s = 0; s < spec.spines && o != l; s++)
					rt(o)->AddRoute(link.addr_a, up[o][s].if_a,
							up[o][s].addr_b);
			for (unsigned s = 0; s < spec.spines; s++)
				rt(spec.leaves + s)->AddRoute(link.addr_a, up[l][s].if_b,
							      up[l][s].addr_a);
		}
	}
	for (unsigned h = 0; h < spec.hosts; h++) {
		Ptr<Host> app = CreateObject<Host>(h, addrs[h], spec.mem_bytes,
						   spec.mtu - 20 - 8 - 56);

		f.hosts.Get(h)->AddApplication(app);
		app->SetStartTime(Seconds(0));
		f.apps.push_back(app);
	}
	return f;
}

void BlackholePlane(Fabric &f, unsigned plane, Time at)
{
	Simulator::Schedule(at, [devices = f.plane_links.at(plane)]() {
		for (unsigned i = 0; i < devices.GetN(); i++)
			LoseAt(devices.Get(i), 1.0);
	});
}

} // namespace metaroce_sim
