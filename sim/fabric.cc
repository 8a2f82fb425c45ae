/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
#include "fabric.h"

#include <cstdio>

#include <ns3/error-model.h>
#include <ns3/internet-stack-helper.h>
#include <ns3/ipv4-address-helper.h>
#include <ns3/ipv4-global-routing-helper.h>
#include <ns3/point-to-point-helper.h>
#include <ns3/pointer.h>
#include <ns3/double.h>
#include <ns3/string.h>
#include <ns3/uinteger.h>

namespace metaroce_sim {

using namespace ns3;

Fabric BuildFabric(const FabricSpec &spec)
{
	Fabric f;
	PointToPointHelper p2p;
	InternetStackHelper stack;
	std::vector<std::vector<Ipv4Address>> addrs(spec.hosts);

	f.hosts.Create(spec.hosts);
	f.switches.Create(spec.planes);
	stack.Install(f.hosts);
	stack.Install(f.switches);
	p2p.SetDeviceAttribute("DataRate", StringValue(spec.rate));
	p2p.SetChannelAttribute("Delay", StringValue(spec.delay));
	p2p.SetDeviceAttribute("Mtu", UintegerValue(spec.mtu));
	for (unsigned p = 0; p < spec.planes; p++)
		for (unsigned h = 0; h < spec.hosts; h++) {
			NetDeviceContainer link = p2p.Install(f.hosts.Get(h), f.switches.Get(p));
			Ipv4AddressHelper ip;
			char base[32];

			snprintf(base, sizeof(base), "10.%u.%u.0", p, h);
			ip.SetBase(base, "255.255.255.0", "0.0.0.1");
			addrs[h].push_back(ip.Assign(link).GetAddress(0));
			if (spec.loss > 0)
				for (unsigned end = 0; end < 2; end++) {
					Ptr<RateErrorModel> em = CreateObject<RateErrorModel>();

					em->SetAttribute("ErrorRate", DoubleValue(spec.loss));
					em->SetAttribute("ErrorUnit", StringValue("ERROR_UNIT_PACKET"));
					link.Get(end)->SetAttribute("ReceiveErrorModel", PointerValue(em));
				}
			f.links.push_back(link);
		}
	Ipv4GlobalRoutingHelper::PopulateRoutingTables();
	for (unsigned h = 0; h < spec.hosts; h++) {
		Ptr<Host> app = CreateObject<Host>(h, addrs[h], spec.mem_bytes,
						   spec.mtu - 20 - 8 - 56);

		f.hosts.Get(h)->AddApplication(app);
		app->SetStartTime(Seconds(0));
		f.apps.push_back(app);
	}
	return f;
}

} // namespace metaroce_sim
