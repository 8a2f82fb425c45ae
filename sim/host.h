/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * One host of the simulated fabric: the engine (lib/proto), unchanged, driven as the daemon
 * drives it. Datagrams and `now` go in (ns-3 UDP sockets, the ECN field read through
 * SocketIpTosTag), datagrams and deadlines come out: each datagram leaves from the plane
 * address and UDP source port the engine chose (a socket bound to each, made when first
 * needed, so a path's source port picks its route), ECT(0) marked (ns-3 takes the TOS from
 * the destination address); each QP's next deadline is one ns-3 event. Above it, a small
 * verbs-like API: QPs connected in pairs, work requests posted, completions as callbacks,
 * one memory region per host.
 */
#ifndef METAROCE_SIM_HOST_H
#define METAROCE_SIM_HOST_H

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <utility>
#include <vector>

#include <ns3/application.h>
#include <ns3/event-id.h>
#include <ns3/ipv4-address.h>
#include <ns3/socket.h>

#include "engine.h"

namespace metaroce_sim {

class Host;

/* A completion: from_recv_queue says which queue the work request was posted to. */
using Completion = std::function<void(bool from_recv_queue, const mrc_completion &wc)>;

/* One QP of a host, connected to one QP of another. */
struct Qp {
	Host *host = nullptr;
	Host *peer = nullptr;
	uint32_t qpn = 0, peer_qpn = 0;
	mrc_conn *conn = nullptr;
	ns3::EventId timer;	 /* at the engine's next deadline */
	Completion on_complete;
};

class Host : public ns3::Application {
public:
	/* Host `index` with one address per plane, its region of mem_bytes; its QPs' data
	 * packets carry at most max_payload bytes (what the planes' MTU leaves, R-99). */
	Host(unsigned index, std::vector<ns3::Ipv4Address> plane_addrs, size_t mem_bytes,
	     unsigned max_payload);
	~Host() override;

	/* A QP here and one at peer, connected: paths_per_plane source ports on each plane
	 * (random, from seed), the engine's defaults otherwise but for what tune() changes.
	 * Returns this host's side; *peer_side the other. */
	Qp *Connect(Host &peer, unsigned paths_per_plane, uint64_t seed, Qp **peer_side,
		    const std::function<void(mrc_conn_config &)> &tune = nullptr);

	/* Work requests, as verbs posts them; the sge's host pointers are filled here from
	 * their offsets into the region (sge.addr is the region's address of its first byte). */
	int PostSend(Qp *qp, mrc_send_wr wr);
	int PostRecv(Qp *qp, mrc_recv_wr wr);

	uint8_t *Mem() { return mem_.data(); }
	size_t MemLen() const { return mem_.size(); }
	uint32_t Key() const { return key_; }
	uint64_t Addr() const { return addr_; } /* the region's first byte, as the wire names it */
	unsigned Index() const { return index_; }
	const ns3::Ipv4Address &PlaneAddr(unsigned plane) const { return planes_[plane]; }
	unsigned Planes() const { return (unsigned)planes_.size(); }
	uint64_t DatagramsSent() const { return sent_; }
	uint64_t DatagramsReceived() const { return received_; }
	uint64_t CeReceived() const { return ce_; }
	/* Data packets its QPs sent again (the engine's count). */
	uint64_t Retransmits() const;

private:
	void StartApplication() override;
	void StopApplication() override;
	void Receive(ns3::Ptr<ns3::Socket> socket);
	void Pump(Qp *qp);  /* everything the QP may send now, then its next deadline */
	void OnTimer(Qp *qp);
	ns3::Ptr<ns3::Socket> SocketFor(uint8_t plane, uint16_t sport);
	Qp *NewQp();
	/* Each element's bytes in the region, found by its address; false if one is not. */
	bool MapSges(mrc_sge *sge, unsigned n);
	static int MrLookup(void *user, uint32_t key, uint64_t addr, uint32_t len,
			    unsigned access, uint8_t **host);
	static void Complete(void *user, bool from_recv_queue, const mrc_completion *wc);

	unsigned index_;
	std::vector<ns3::Ipv4Address> planes_;
	std::vector<uint8_t> mem_;
	uint32_t key_;
	uint64_t addr_;
	unsigned max_payload_;
	uint32_t next_qpn_ = 0x100;
	std::vector<ns3::Ptr<ns3::Socket>> rx_; /* one a plane, on the MetaRoCE port */
	std::map<std::pair<uint8_t, uint16_t>, ns3::Ptr<ns3::Socket>> tx_;
	std::map<uint32_t, std::unique_ptr<Qp>> qps_;
	uint64_t sent_ = 0, received_ = 0, ce_ = 0;
};

} // namespace metaroce_sim

#endif
