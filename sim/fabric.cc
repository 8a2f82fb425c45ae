/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
#include "fabric.h"

#include <algorithm>
#include <cstdio>
#include <stdexcept>
#include <string>

#include <ns3/data-rate.h>
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
	Ptr<EgressQueue> out_a, out_b; /* each end's egress queue */
};

/* Every packet arriving at d lost at this rate; by a random stream of the device's own, so
 * a fabric loses the same packets whatever ran in the process before it (ns-3 numbers the
 * streams it gives out itself across runs). */
void LoseAt(Ptr<NetDevice> d, double rate)
{
	Ptr<RateErrorModel> em = CreateObject<RateErrorModel>();

	em->SetAttribute("ErrorRate", DoubleValue(rate));
	em->SetAttribute("ErrorUnit", StringValue("ERROR_UNIT_PACKET"));
	em->AssignStreams((int64_t)d->GetNode()->GetId() * 1024 + d->GetIfIndex());
	d->SetAttribute("ReceiveErrorModel", PointerValue(em));
}

uint32_t IfOf(Ptr<Node> n, Ptr<NetDevice> d)
{
	return (uint32_t)n->GetObject<Ipv4>()->GetInterfaceForDevice(d);
}

/* Link n of plane p's address block `net` (10: hosts, 11 and 12: between switches), a /30:
 * 16,384 of them a plane. */
std::string LinkBase(unsigned net, unsigned p, unsigned n)
{
	char base[32];

	snprintf(base, sizeof(base), "%u.%u.%u.%u", net, p, n / 64, n % 64 * 4);
	return base;
}

/* tc_a, tc_b: each end's egress queue; lose_a, lose_b: what each end loses of what it gets */
Link Connect(PointToPointHelper &p2p, TrafficControlHelper &tc_a, TrafficControlHelper &tc_b,
	     Ptr<Node> a, Ptr<Node> b, const std::string &base, double lose_a, double lose_b)
{
	NetDeviceContainer d = p2p.Install(a, b);
	Ipv4AddressHelper ip;
	Ptr<EgressQueue> qa = DynamicCast<EgressQueue>(tc_a.Install(d.Get(0)).Get(0));
	Ptr<EgressQueue> qb = DynamicCast<EgressQueue>(tc_b.Install(d.Get(1)).Get(0));

	ip.SetBase(base.c_str(), "255.255.255.252", "0.0.0.1");
	Ipv4InterfaceContainer ifs = ip.Assign(d);
	if (lose_a > 0)
		LoseAt(d.Get(0), lose_a);
	if (lose_b > 0)
		LoseAt(d.Get(1), lose_b);
	return { IfOf(a, d.Get(0)), IfOf(b, d.Get(1)), ifs.GetAddress(0), ifs.GetAddress(1), d,
		 qa, qb };
}

/* What building a fabric needs, plane after plane. */
struct Builder {
	const FabricSpec &spec;
	Fabric &f;
	unsigned per_plane; /* switches */
	PointToPointHelper p2p;
	TrafficControlHelper tc, nic; /* a switch's egress queue, a host's */
	Ipv4StaticRoutingHelper host_routes;
	std::vector<std::vector<Ipv4Address>> addrs; /* [host][plane] */

	Ptr<Node> Sw(unsigned p, unsigned i) const { return f.switches.Get(p * per_plane + i); }
	Ptr<EcmpRouting> Rt(unsigned p, unsigned i) const { return f.routing[p * per_plane + i]; }

	/* A switch's end of a link: its queue marks, and with PFC the switch pauses the far
	 * end's queue for what came in here. */
	void SwitchEnd(unsigned sw, Ptr<EgressQueue> out, uint32_t iface, Ptr<EgressQueue> far)
	{
		out->SetEcnThreshold(spec.ecn_k);
		f.queues.push_back(out);
		if (!spec.pfc)
			return;
		out->SetPfc(f.pfc[sw]);
		f.pfc[sw]->AddIngress(iface, far, Time(spec.delay));
	}

	/* Switches i and j of plane p, link n of block net: i gets the first address. */
	Link Join(unsigned p, unsigned i, unsigned j, unsigned net, unsigned n)
	{
		Link l = Connect(p2p, tc, tc, Sw(p, i), Sw(p, j), LinkBase(net, p, n), spec.loss,
				 spec.loss);

		SwitchEnd(p * per_plane + i, l.out_a, l.if_a, l.out_b);
		SwitchEnd(p * per_plane + j, l.out_b, l.if_b, l.out_a);
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
		double host_loss = 1 - (1 - spec.loss) * (1 - spec.host_loss);
		Link l = Connect(p2p, nic, tc, host, Sw(p, edge), LinkBase(10, p, h), host_loss,
				 spec.loss);

		SwitchEnd(p * per_plane + edge, l.out_b, l.if_b, l.out_a);
		f.to_host[h].push_back(l.out_b);
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

	/* (the addresses: 16,384 /30 links a block and plane) */
	if (!spec.hosts || spec.hosts > 16384 || !spec.planes || spec.planes > MRC_MAX_PLANES ||
	    spec.mtu < 576 || spec.mtu > 9216 || !spec.ecn_k || spec.buffer <= spec.ecn_k ||
	    spec.loss < 0 || spec.loss > 1 || spec.host_loss < 0 || spec.host_loss > 1 ||
	    (k ? k % 2 || k > 16 || spec.hosts > k * k * k / 4
	       : !spec.leaves || spec.leaves * spec.spines > 16384 ||
			 (spec.leaves > 1 && !spec.spines)))
		throw std::invalid_argument("a fabric of that description cannot be built");
	const uint64_t bps = DataRate(spec.rate).GetBitRate();
	const double delay_s = Time(spec.delay).GetSeconds();
	/* links crossed one way through the top tier (one leaf: host, leaf, host) */
	const unsigned hops = k ? 6 : spec.leaves > 1 ? 4 : 2;

	/* a full packet there and a 100-byte ACK back, every link's delay both ways */
	f.base_rtt_s = hops * (2 * delay_s + (spec.mtu + 100) * 8.0 / (double)bps);
	f.paths_per_plane = std::max(1u, std::min(spec.paths_per_plane,
						   (unsigned)MRC_MAX_PATHS / spec.planes));
	f.plane_links.resize(spec.planes);
	f.to_host.resize(spec.hosts);
	f.hosts.Create(spec.hosts);
	f.switches.Create(spec.planes * b.per_plane);
	host_stack.SetRoutingHelper(b.host_routes);
	host_stack.Install(f.hosts);
	switch_stack.SetRoutingHelper(EcmpRoutingHelper());
	switch_stack.Install(f.switches);
	const uint32_t xoff = 2 * spec.ecn_k * spec.mtu;
	/* what arrives between a PAUSE sent and obeyed: two delays' worth, the packet on the
	 * wire and the one in the sender's device */
	const uint32_t headroom = (uint32_t)(2 * delay_s * (double)bps / 8) + 2 * spec.mtu;

	for (unsigned s = 0; s < f.switches.GetN(); s++) {
		Ptr<Ipv4> ip = f.switches.Get(s)->GetObject<Ipv4>();
		Ptr<EcmpRouting> r = DynamicCast<EcmpRouting>(ip->GetRoutingProtocol());

		r->SetSalt(0x9e3779b9u * (s + 1));
		r->SetTagIngress(spec.pfc);
		f.routing.push_back(r);
		if (spec.pfc)
			f.pfc.push_back(Create<Pfc>(xoff, std::max(xoff - 2 * spec.mtu, spec.mtu),
						    headroom));
	}
	b.p2p.SetDeviceAttribute("DataRate", StringValue(spec.rate));
	b.p2p.SetDeviceAttribute("Mtu", UintegerValue(spec.mtu));
	b.p2p.SetChannelAttribute("Delay", StringValue(spec.delay));
	/* the queue builds in the queue disc, where it is marked, not in the device */
	b.p2p.SetQueue("ns3::DropTailQueue<Packet>", "MaxSize", StringValue("1p"));
	/* a switch's egress (the ECN step is set per queue); lossless with PFC, which bounds
	 * what each ingress holds instead */
	b.tc.SetRootQueueDisc("metaroce_sim::EgressQueue", "MaxSize",
			      QueueSizeValue(QueueSize(QueueSizeUnit::PACKETS,
						       spec.pfc ? 1000000 : spec.buffer)));
	/* a host's own egress: a NIC's queue, which neither marks nor drops what it was given */
	b.nic.SetRootQueueDisc("metaroce_sim::EgressQueue", "MaxSize",
			       QueueSizeValue(QueueSize(QueueSizeUnit::PACKETS, 1000000)));
	for (unsigned p = 0; p < spec.planes; p++) {
		if (k)
			b.FatTree(p);
		else
			b.LeafSpine(p);
	}
	for (unsigned h = 0; h < spec.hosts; h++) {
		Ptr<Host> app = CreateObject<Host>(h, b.addrs[h], spec.mem_bytes,
						   spec.mtu - 20 - 8 - 56, spec.transport,
						   (uint64_t)(spec.rx_capacity * spec.planes *
							      (double)bps / 1000));

		/* before a sample: twenty base RTTs (a queue of a few hundred packets), at least
		 * 100 us */
		app->SetInitialRto(std::max<uint64_t>(100000, (uint64_t)(20e9 * f.base_rtt_s)));
		f.hosts.Get(h)->AddApplication(app);
		app->SetStartTime(Seconds(0));
		f.apps.push_back(app);
	}
	return f;
}

SwitchCounts CountSwitches(const Fabric &f)
{
	SwitchCounts c;

	for (const auto &q : f.queues)
		c.drops += q->GetStats().nTotalDroppedPackets;
	for (const auto &p : f.pfc) {
		c.pauses += p->Pauses();
		c.over_headroom += p->OverHeadroom();
	}
	return c;
}

Fabric::~Fabric()
{
	for (auto &p : pfc)
		p->Clear(); /* each Pfc and its senders' queues hold each other */
}

void BlackholePlane(Fabric &f, unsigned plane, Time at)
{
	Simulator::Schedule(at, [devices = f.plane_links.at(plane)]() {
		for (unsigned i = 0; i < devices.GetN(); i++)
			LoseAt(devices.Get(i), 1.0);
	});
}

} // namespace metaroce_sim
