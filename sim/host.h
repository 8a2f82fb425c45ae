/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * One host of the simulated fabric: the engine (lib/proto), unchanged, driven as the daemon
 * drives it. Datagrams and `now` go in (an ns-3 UDP socket a plane, the ECN field read
 * through SocketIpTosTag), datagrams and deadlines come out: each datagram leaves from the
 * plane address and UDP source port the engine chose, ECT(0) marked, handed to ns-3's UDP
 * directly (a socket bound to each source port, as a first version had, makes every arriving
 * datagram's demultiplexing a walk over thousands of them); each QP's next deadline is one
 * ns-3 event. Above it, a small verbs-like API: QPs connected in pairs, work requests posted,
 * completions as callbacks, one memory region per host.
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
#include <ns3/udp-l4-protocol.h>

#include "engine.h"

namespace metaroce_sim {

class Host;

/* What a host's QPs speak: MetaRoCE (every path of every plane, SACK, out-of-order placement),
 * or the engine's RoCEv2 baseline (one path, on one plane a QP pair draws at random, in order,
 * go-back-N; R-110..R-113) as a RoCEv2 NIC's QPs would be spread over its ports. */
enum class Transport { MetaRoCE, RoCEv2 };

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
	 * packets carry at most max_payload bytes (what the planes' MTU leaves, R-99); its
	 * receive capacity, shared out by rate hints as the daemon's rx_capacity is (R-105; 0:
	 * no hints). */
	Host(unsigned index, std::vector<ns3::Ipv4Address> plane_addrs, size_t mem_bytes,
	     unsigned max_payload, Transport transport, uint64_t rx_capacity_kbps);
	~Host() override;

	/* A QP here and one at peer, connected: paths_per_plane source ports on each plane
	 * (random, from seed; the RoCEv2 baseline takes one of them), the engine's defaults
	 * otherwise but for what tune() changes.
	 * Returns this host's side; *peer_side the other. */
	Qp *Connect(Host &peer, unsigned paths_per_plane, uint64_t seed, Qp **peer_side,
		    const std::function<void(mrc_conn_config &)> &tune = nullptr);

	/* Work requests, as verbs posts them; the sge's host pointers are filled here from
	 * their offsets into the region (sge.addr is the region's address of its first byte). */
	int PostSend(Qp *qp, mrc_send_wr wr);
	int PostRecv(Qp *qp, mrc_recv_wr wr);

	/* The RTO before a QP's first RTT sample (the engine's default is a daemon's 1 ms). */
	void SetInitialRto(uint64_t ns) { initial_rto_ns_ = ns; }

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
	/* QPs in the error state (a work request completed with an error). */
	unsigned ErroredQps() const;

private:
	void StartApplication() override;
	void StopApplication() override;
	void Receive(ns3::Ptr<ns3::Socket> socket);
	void Pump(Qp *qp);  /* everything the QP may send now, then its next deadline */
	int Pumped(Qp *qp, int e); /* a post's result e; the QP pumped if it was taken */
	void OnTimer(Qp *qp);
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
	Transport transport_;
	uint64_t initial_rto_ns_ = 1000000;
	mrc_rate_domain rate_;
	uint32_t next_qpn_ = 0x100;
	std::vector<ns3::Ptr<ns3::Socket>> rx_; /* one a plane, on the MetaRoCE port */
	ns3::Ptr<ns3::UdpL4Protocol> udp_;
	std::map<uint32_t, std::unique_ptr<Qp>> qps_;
	uint64_t sent_ = 0, received_ = 0, ce_ = 0;
};

} // namespace metaroce_sim

#endif
