/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Fabrics for the simulator, built from a description. P planes, each its own Clos: a
 * leaf-spine of `leaves` leaf and `spines` spine switches (every leaf linked to every spine;
 * hosts spread over the leaves in order), or a 3-tier k-ary fat-tree (edge, aggregation and
 * core; fabric.cc says how it is wired); every host has one link to its leaf or edge switch
 * on each plane. Switches forward by a hash of the 5-tuple (ecmp.h), so a path's UDP
 * source port picks its spine; every switch's egress queue is RED with ECN used as a step,
 * marking CE every packet that finds ecn_k queued, dropping beyond buffer packets (a host's
 * own egress, a NIC's, is a FIFO that neither marks nor drops). Host h's address on plane p is
 * 10.p.h.1 (its switch's end of the link 10.p.h.2); the links between switches are
 * 11.p.n.0/24 (leaf to spine, edge to aggregation) and 12.p.n.0/24 (aggregation to core).
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

namespace metaroce_sim {

struct FabricSpec {
	unsigned hosts = 8;
	unsigned planes = 2;
	unsigned leaves = 2;		 /* per plane */
	unsigned spines = 2;		 /* per plane; 0 with one leaf: a switch a plane */
	unsigned fat_tree_k = 0;	 /* not 0: each plane a k-ary fat-tree instead (k even,
					  * at most 8; up to k^3/4 hosts, dealt round the edges) */
	std::string rate = "10Gbps";	 /* every link's */
	std::string delay = "1us";	 /* every link's, each way */
	/* every link's IP MTU (at most 9216): a data packet's payload fits (12.4: less the
	 * IP, UDP and data headers) */
	unsigned mtu = 9000;
	/* packets queued from which a switch's egress queue marks CE */
	unsigned ecn_k = 20;
	unsigned buffer = 200;		 /* packets a queue holds at most */
	double loss = 0;		 /* share of the packets every link loses at random */
	size_t mem_bytes = 1u << 20;	 /* each host's region */
};

struct Fabric {
	ns3::NodeContainer hosts, switches; /* plane by plane: leaves, then spines; or edges,
					     * aggregation switches, then cores */
	std::vector<ns3::Ptr<Host>> apps;   /* the engine on each host */
	std::vector<ns3::Ptr<EcmpRouting>> routing; /* each switch's */
	std::vector<ns3::NetDeviceContainer> plane_links; /* each plane's links' devices */
	std::vector<unsigned> top; /* the top tier's switches (spines, cores), plane by plane */
};

/* Builds the fabric and starts each host's engine at time 0; throws std::invalid_argument
 * for a description that cannot be built. */
Fabric BuildFabric(const FabricSpec &spec);

/* From `at` on, every link of the plane loses everything, both ways, and nothing tells the
 * hosts: a plane failed silently (a blackhole), as the seed's failover has it. */
void BlackholePlane(Fabric &f, unsigned plane, ns3::Time at);

} // namespace metaroce_sim

#endif
