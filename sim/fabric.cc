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

/* What building a fabric needs, plane after plane. */
struct Builder {
	const FabricSpec &spec;
	Fabric &f;
	unsigned per_plane; /* switches */
	PointToPointHelper p2p;
	TrafficControlHelper tc, fifo; /* a switch's egress queue, a host's */
	Ipv4StaticRoutingHelper host_routes;
	std::vector<std::vector<Ipv4Address>> addrs; /* [host][plane] */

	Ptr<Node> Sw(unsigned p, unsigned i) const { return f.switches.Get(p * per_plane + i); }
	Ptr<EcmpRouting> Rt(unsigned p, unsigned i) const { return f.routing[p * per_plane + i]; }

	/* Switches i and j of plane p, numbered net.p.n.0/24: i gets .1. */
	Link Join(unsigned p, unsigned i, unsigned j, unsigned net, unsigned n)
	{
		char base[32];

		snprintf(base, sizeof(base), "%u.%u.%u.0", net, p, n);
		Link l = Connect(spec, p2p, tc, tc, Sw(p, i), Sw(p, j), base);

		f.plane_links[p].Add(l.devices);
		return l;
	}

	/* Switch i of plane p reaches `to` up any of its links `ups` (i their first end). */
	void Up(unsigned p, unsigned i, const std::vector<Link> &ups, Ipv4Address to)
	{
		for (const Link &l : ups)
			Rt(p, i)->AddRoute(to, l.if_a, l.addr_b);
	}

	/* Switch i of plane p reaches `to` down the one link `down` (i its second end). */
	void Down(unsigned p, unsigned i, const Link &down, Ipv4Address to)
	{
		Rt(p, i)->AddRoute(to, down.if_b, down.addr_a);
	}

	/* Host h on switch `edge` of plane p: its address there, its route to the plane's
	 * prefix, the switch's route down to it. */
	void Attach(unsigned p, unsigned h, unsigned edge)
	{
		char base[32];
		Ptr<Node> host = f.hosts.Get(h);

		snprintf(base, sizeof(base), "10.%u.%u.0", p, h);
		Link l = Connect(spec, p2p, fifo, tc, host, Sw(p, edge), base);

		f.plane_links[p].Add(l.devices);
		addrs[h].push_back(l.addr_a);
		snprintf(base, sizeof(base), "10.%u.0.0", p);
		host_routes.GetStaticRouting(host->GetObject<Ipv4>())
			->AddNetworkRouteTo(Ipv4Address(base), Ipv4Mask("255.255.0.0"), l.addr_b,
					    l.if_a);
		Rt(p, edge)->AddRoute(l.addr_a, l.if_b, l.addr_a);
	}

	/* Plane p as a leaf-spine: every leaf to every spine; to a host, its leaf straight
	 * down, every other leaf up to any spine, every spine down to its leaf. */
	void LeafSpine(unsigned p)
	{
		const unsigned L = spec.leaves, S = spec.spines;
		const unsigned per_leaf = (spec.hosts + L - 1) / L;
		std::vector<std::vector<Link>> up(L); /* [leaf][spine] */

		for (unsigned l = 0; l < L; l++)
			for (unsigned s = 0; s < S; s++)
				up[l].push_back(Join(p, l, L + s, 11, l * S + s));
		for (unsigned h = 0; h < spec.hosts; h++) {
			unsigned l = h / per_leaf;
			Ipv4Address to;

			Attach(p, h, l);
			to = addrs[h][p];
			for (unsigned o = 0; o < L; o++)
				if (o != l)
					Up(p, o, up[o], to);
			for (unsigned s = 0; s < S; s++)
				Down(p, L + s, up[l][s], to);
		}
		f.top.resize(spec.planes * S);
		for (unsigned s = 0; s < S; s++)
			f.top[p * S + s] = p * per_plane + L + s;
	}

	/*
	 * Plane p as a k-ary fat-tree: k pods of k/2 edge and k/2 aggregation switches, every
	 * edge to every aggregation switch of its pod, aggregation switch j of each pod to
	 * cores j*k/2 .. j*k/2 + k/2 - 1; hosts dealt round the edges (host h on edge h mod
	 * k^2/2, so a few hosts still span the pods and the cores). To a host: its edge straight
	 * down; another edge up to any aggregation switch of its pod; those of its pod down to
	 * its edge, those of other pods up to any of their cores; a core down to the host's
	 * pod's aggregation switch it reaches.
	 */
	void FatTree(unsigned p)
	{
		const unsigned k = spec.fat_tree_k, half = k / 2;
		const unsigned edges = k * half, cores = half * half;
		std::vector<std::vector<Link>> ea(edges), ac(edges); /* [edge|agg][j] */

		/* edges 0 .. edges-1, aggregation switches edges .. 2 edges-1, then cores */
		for (unsigned e = 0; e < edges; e++)
			for (unsigned j = 0; j < half; j++)
				ea[e].push_back(Join(p, e, edges + (e / half) * half + j, 11,
						     e * half + j));
		for (unsigned a = 0; a < edges; a++)
			for (unsigned j = 0; j < half; j++) {
				unsigned core = (a % half) * half + j;

				ac[a].push_back(Join(p, edges + a, 2 * edges + core, 12,
						     a * half + j));
			}
		for (unsigned h = 0; h < spec.hosts; h++) {
			unsigned e = h % edges, pod = e / half;
			Ipv4Address to;

			Attach(p, h, e);
			to = addrs[h][p];
			for (unsigned o = 0; o < edges; o++)
				if (o != e)
					Up(p, o, ea[o], to);
			for (unsigned a = 0; a < edges; a++) {
				if (a / half == pod) /* down to the host's edge */
					Down(p, edges + a, ea[e][a % half], to);
				else
					Up(p, edges + a, ac[a], to);
			}
			for (unsigned c = 0; c < cores; c++)
				Down(p, 2 * edges + c, ac[pod * half + c / half][c % half], to);
		}
		f.top.resize(spec.planes * cores);
		for (unsigned c = 0; c < cores; c++)
			f.top[p * cores + c] = p * per_plane + 2 * edges + c;
	}
};

} // namespace

Fabric BuildFabric(const FabricSpec &spec)
{
	Fabric f;
	const unsigned k = spec.fat_tree_k;
	Builder b{ spec, f, k ? k * k + k * k / 4 : spec.leaves + spec.spines, {}, {}, {}, {},
		   std::vector<std::vector<Ipv4Address>>(spec.hosts) };
	InternetStackHelper host_stack, switch_stack;

	/* (the addresses: a host's last byte, an inter-switch link's third) */
	if (!spec.hosts || spec.hosts > 255 || !spec.planes || spec.planes > MRC_MAX_PLANES ||
	    spec.mtu < 576 || spec.mtu > 9216 || !spec.ecn_k || spec.buffer <= spec.ecn_k ||
	    (k ? k % 2 || k > 8 || spec.hosts > k * k * k / 4
	       : !spec.leaves || spec.leaves * spec.spines > 256 ||
			 (spec.leaves > 1 && !spec.spines)))
		throw std::invalid_argument("a fabric of that description cannot be built");
	f.plane_links.resize(spec.planes);
	f.hosts.Create(spec.hosts);
	f.switches.Create(spec.planes * b.per_plane);
	host_stack.SetRoutingHelper(b.host_routes);
	host_stack.Install(f.hosts);
	switch_stack.SetRoutingHelper(EcmpRoutingHelper());
	switch_stack.Install(f.switches);
	for (unsigned s = 0; s < f.switches.GetN(); s++) {
		Ptr<Ipv4> ip = f.switches.Get(s)->GetObject<Ipv4>();
		Ptr<EcmpRouting> r = DynamicCast<EcmpRouting>(ip->GetRoutingProtocol());

		r->SetSalt(0x9e3779b9u * (s + 1));
		f.routing.push_back(r);
	}
	b.p2p.SetDeviceAttribute("DataRate", StringValue(spec.rate));
	b.p2p.SetDeviceAttribute("Mtu", UintegerValue(spec.mtu));
	b.p2p.SetChannelAttribute("Delay", StringValue(spec.delay));
	/* the queue builds in the queue disc, where it is marked, not in the device */
	b.p2p.SetQueue("ns3::DropTailQueue<Packet>", "MaxSize", StringValue("1p"));
	/* a switch's egress: RED as a step, on the instantaneous queue (QW 1), not gentle,
	 * both thresholds K, so every packet that finds K queued is marked (forced, and with
	 * ECN and no hard drop a forced drop is a mark) */
	b.tc.SetRootQueueDisc("ns3::RedQueueDisc", "UseEcn", BooleanValue(true), "UseHardDrop",
			      BooleanValue(false), "Gentle", BooleanValue(false), "Wait",
			      BooleanValue(false), "QW", DoubleValue(1), "MinTh",
			      DoubleValue(spec.ecn_k), "MaxTh", DoubleValue(spec.ecn_k), "MaxSize",
			      QueueSizeValue(QueueSize(QueueSizeUnit::PACKETS, spec.buffer)),
			      "MeanPktSize", UintegerValue(spec.mtu));
	/* a host's own egress: a NIC's queue, which neither marks nor drops what it was given */
	b.fifo.SetRootQueueDisc("ns3::FifoQueueDisc", "MaxSize",
				QueueSizeValue(QueueSize(QueueSizeUnit::PACKETS, 100000)));
	for (unsigned p = 0; p < spec.planes; p++) {
		if (k)
			b.FatTree(p);
		else
			b.LeafSpine(p);
	}
	for (unsigned h = 0; h < spec.hosts; h++) {
		Ptr<Host> app = CreateObject<Host>(h, b.addrs[h], spec.mem_bytes,
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
