/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Fabrics for the simulator, built from a description. P planes, each its own Clos: a
 * leaf-spine of `leaves` leaf and `spines` spine switches (every leaf linked to every spine;
 * hosts spread over the leaves in order), or a 3-tier k-ary fat-tree (edge, aggregation and
 * core; fabric.cc says how it is wired); every host has one link to its leaf or edge switch
 * on each plane. Switches forward by a hash of the 5-tuple (ecmp.h), so a path's UDP
 * source port picks its spine; every egress queue is an EgressQueue (queue.h): a switch's
 * marks CE from ecn_k queued and drops beyond `buffer` packets, or with pfc pauses its
 * senders instead of dropping; a host's own, a NIC's, neither marks nor drops. Host h's
 * address on plane p is 10.p.h/64.(h%64)*4+1 (its switch's end of the link +1 more); the
 * links between switches are /30s of 11.p.0.0/16 (leaf to spine, edge to aggregation) and
 * 12.p.0.0/16 (aggregation to core).
 */
#ifndef METAROCE_SIM_FABRIC_H
#define METAROCE_SIM_FABRIC_H

#include <string>
#include <vector>

#include <ns3/net-device-container.h>
#include <ns3/node-container.h>
#include <ns3/ptr.h>

#include "ecmp.h"
#include "host.h"
#include "queue.h"

namespace metaroce_sim {

struct FabricSpec {
	unsigned hosts = 8;
	unsigned planes = 2;
	unsigned leaves = 2;		 /* per plane */
	unsigned spines = 2;		 /* per plane; 0 with one leaf: a switch a plane */
	unsigned fat_tree_k = 0;	 /* not 0: each plane a k-ary fat-tree instead (k even,
					  * at most 16; up to k^3/4 hosts, dealt round the edges) */
	std::string rate = "10Gbps";	 /* every link's */
	std::string delay = "1us";	 /* every link's, each way */
	/* every link's IP MTU (at most 9216): a data packet's payload fits (12.4: less the
	 * IP, UDP and data headers) */
	unsigned mtu = 9000;
	/* packets queued from which a switch's egress queue marks CE */
	unsigned ecn_k = 20;
	unsigned buffer = 200;		 /* packets a switch's queue holds at most (not with pfc) */
	double loss = 0;		 /* share of the packets every link loses at random */
	double host_loss = 0;		 /* share every host's NIC loses of what reaches it: a
					  * packet's loss end to end, whatever its route */
	/* PFC on every switch (queue.h), its queues lossless: xoff twice ecn_k packets, so ECN
	 * marks before PFC pauses, xon two packets below */
	bool pfc = false;
	Transport transport = Transport::MetaRoCE; /* every host's QPs' */
	unsigned paths_per_plane = 4;	 /* a workload's QPs' (at most 32 paths in all) */
	/* each host's receive capacity for its rate hints, as a share of its links'
	 * (0: no hints) */
	double rx_capacity = 0.95;
	size_t mem_bytes = 1u << 20;	 /* each host's region */
};

struct Fabric {
	Fabric() = default;
	Fabric(Fabric &&) = default;
	Fabric &operator=(Fabric &&) = default;
	~Fabric();

	ns3::NodeContainer hosts, switches; /* plane by plane: leaves, then spines; or edges,
					     * aggregation switches, then cores */
	std::vector<ns3::Ptr<Host>> apps;   /* the engine on each host */
	std::vector<ns3::Ptr<EcmpRouting>> routing; /* each switch's */
	std::vector<ns3::NetDeviceContainer> plane_links; /* each plane's links' devices */
	std::vector<unsigned> top; /* the top tier's switches (spines, cores), plane by plane */
	/* the last queue before each host on each plane, [host][plane]: an incast's */
	std::vector<std::vector<ns3::Ptr<EgressQueue>>> to_host;
	std::vector<ns3::Ptr<EgressQueue>> queues; /* every switch's egress queue */
	std::vector<ns3::Ptr<Pfc>> pfc;	  /* each switch's, with pfc */
	unsigned paths_per_plane = 4;
	double base_rtt_s = 0; /* a full packet out and its ACK back across the top tier */
};

/* What the switches did: packets their queues dropped, PAUSEs sent, bytes an ingress held
 * past PFC's headroom. */
struct SwitchCounts {
	uint64_t drops = 0, pauses = 0, over_headroom = 0;
};
SwitchCounts CountSwitches(const Fabric &f);

/* Builds the fabric and starts each host's engine at time 0; throws std::invalid_argument
 * for a description that cannot be built. */
Fabric BuildFabric(const FabricSpec &spec);

/* From `at` on, every link of the plane loses everything, both ways, and nothing tells the
 * hosts: a plane failed silently (a blackhole), as the seed's failover has it. */
void BlackholePlane(Fabric &f, unsigned plane, ns3::Time at);

} // namespace metaroce_sim

#endif
