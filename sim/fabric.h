/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Fabrics for the simulator, built from a description. So far: P planes, each its own switch
 * (an ns-3 router) that every host reaches by one link; host h's address on plane p is
 * 10.p.h.1, its switch's end of the link 10.p.h.2. Routes are ns-3's global routing.
 */
#ifndef METAROCE_SIM_FABRIC_H
#define METAROCE_SIM_FABRIC_H

#include <string>
#include <vector>

#include <ns3/net-device-container.h>
#include <ns3/node-container.h>
#include <ns3/ptr.h>

#include "host.h"

namespace metaroce_sim {

struct FabricSpec {
	unsigned hosts = 8;
	unsigned planes = 2;
	std::string rate = "10Gbps";	 /* every link's */
	std::string delay = "1us";	 /* every link's, each way */
	unsigned mtu = 9000;		 /* every link's IP MTU: a data packet's payload fits
					  * (12.4: less IP, UDP and data headers) */
	double loss = 0;		 /* share of the packets every link loses at random */
	size_t mem_bytes = 1u << 20;	 /* each host's region */
};

struct Fabric {
	ns3::NodeContainer hosts, switches;
	std::vector<ns3::NetDeviceContainer> links; /* [plane * hosts + host]: host end first */
	std::vector<ns3::Ptr<Host>> apps;	     /* the engine on each host */
};

/* Builds the fabric and starts each host's engine at time 0. */
Fabric BuildFabric(const FabricSpec &spec);

} // namespace metaroce_sim

#endif
