/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
#include "host.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <new>
#include <stdexcept>

#include <ns3/inet-socket-address.h>
#include <ns3/ipv4-header.h>
#include <ns3/packet.h>
#include <ns3/simulator.h>
#include <ns3/udp-socket-factory.h>

namespace metaroce_sim {

using namespace ns3;

namespace {

constexpr uint8_t ECT0 = 0x02; /* what every MetaRoCE datagram leaves with */
constexpr size_t DGRAM_MAX = 9216;
constexpr uint32_t MAX_QPS = 4096; /* a host's, for its rate domain */

uint64_t Now()
{
	return (uint64_t)Simulator::Now().GetNanoSeconds();
}

uint64_t SplitMix(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

} // namespace

Host::Host(unsigned index, std::vector<Ipv4Address> plane_addrs, size_t mem_bytes,
	   unsigned max_payload, Transport transport, uint64_t rx_capacity_kbps)
	: index_(index), planes_(std::move(plane_addrs)), mem_(mem_bytes),
	  key_(0x1000u + index), addr_(0x10000000ull * (index + 1)), max_payload_(max_payload),
	  transport_(transport), rate_()
{
	if (mrc_rate_domain_init(&rate_, rx_capacity_kbps, MAX_QPS))
		throw std::bad_alloc();
}

Host::~Host()
{
	for (auto &q : qps_)
		mrc_conn_free(q.second->conn);
	mrc_rate_domain_fini(&rate_);
}

uint64_t Host::Retransmits() const
{
	uint64_t n = 0;

	for (const auto &q : qps_)
		n += mrc_conn_stats(q.second->conn)->tx_retransmits;
	return n;
}

unsigned Host::ErroredQps() const
{
	unsigned n = 0;

	for (const auto &q : qps_)
		n += mrc_conn_state(q.second->conn) == MRC_QPS_ERR;
	return n;
}

void Host::StartApplication()
{
	udp_ = GetNode()->GetObject<UdpL4Protocol>();
	for (unsigned p = 0; p < planes_.size(); p++) {
		Ptr<Socket> s = Socket::CreateSocket(GetNode(), UdpSocketFactory::GetTypeId());

		if (s->Bind(InetSocketAddress(planes_[p], MRC_UDP_PORT_DEFAULT)))
			throw std::runtime_error("cannot bind the MetaRoCE port");
		s->SetIpRecvTos(true);
		s->SetRecvCallback(MakeCallback(&Host::Receive, this));
		rx_.push_back(s);
	}
}

void Host::StopApplication()
{
	for (auto &q : qps_)
		Simulator::Cancel(q.second->timer);
	for (auto &s : rx_)
		s->Close();
}

Qp *Host::NewQp()
{
	auto q = std::make_unique<Qp>();
	Qp *qp = q.get();

	qp->host = this;
	qp->qpn = next_qpn_++;
	qps_[qp->qpn] = std::move(q);
	return qp;
}

Qp *Host::Connect(Host &peer, unsigned paths_per_plane, uint64_t seed, Qp **peer_side,
		  const std::function<void(mrc_conn_config &)> &tune)
{
	static const mrc_conn_callbacks cb = { MrLookup, Complete, nullptr, nullptr };
	Qp *side[2] = { NewQp(), peer.NewQp() };
	uint32_t psn[2] = { (uint32_t)SplitMix(&seed), (uint32_t)SplitMix(&seed) };

	side[0]->peer = &peer;
	side[1]->peer = this;
	side[0]->peer_qpn = side[1]->qpn;
	side[1]->peer_qpn = side[0]->qpn;
	for (int k = 0; k < 2; k++) {
		mrc_conn_config cfg;
		unsigned n = 0;

		mrc_conn_config_default(&cfg);
		/* a fabric's RTT, not an epoll daemon's timer granularity */
		cfg.rto.min_rto_ns = 20000;
		cfg.rto.initial_rto_ns = initial_rto_ns_;
		if (cfg.max_payload > max_payload_)
			cfg.max_payload = (uint16_t)max_payload_;
		cfg.local_qpn = side[k]->qpn;
		cfg.remote_qpn = side[k]->peer_qpn;
		cfg.sq_psn = psn[k];
		cfg.rq_psn = psn[!k];
		/* The scheduler rotates over the paths in order from the first: the planes take
		 * turns, each QP starting at a plane of its own, so a message of a few packets, and
		 * the first packets of many QPs, spread over every plane instead of all queueing
		 * on the first one's link. */
		const unsigned planes = std::min(Planes(), peer.Planes());
		const unsigned first = (unsigned)(SplitMix(&seed) % planes);

		for (unsigned i = 0; i < paths_per_plane; i++)
			for (unsigned p = 0; p < planes && n < MRC_MAX_PATHS; p++, n++) {
				cfg.paths[n].plane = (uint8_t)((first + p) % planes);
				cfg.paths[n].sport =
					(uint16_t)(MRC_UDP_SPORT_MIN +
						   SplitMix(&seed) %
							   (MRC_UDP_SPORT_MAX - MRC_UDP_SPORT_MIN));
			}
		cfg.n_paths = (uint8_t)n;
		if (transport_ == Transport::RoCEv2) {
			/* the pair's one plane, the same at both ends: path 0; and the
			 * first window a MetaRoCE QP has over all its paths, as a RoCEv2 NIC
			 * starts at line rate rather than from a path's few packets */
			cfg.mode = MRC_MODE_ROCEV2;
			cfg.paths[0].plane = (uint8_t)(psn[0] % planes);
			cfg.cc.init_cwnd = std::min(cfg.cc.init_cwnd * n, cfg.cc.max_cwnd);
		}
		cfg.seed = SplitMix(&seed);
		cfg.rate_domain = side[k]->host->rate_.capacity_kbps ? &side[k]->host->rate_
								      : nullptr;
		if (tune)
			tune(cfg);
		side[k]->conn = mrc_conn_new(&cfg, &cb, side[k], Now());
		if (!side[k]->conn)
			throw std::runtime_error("the engine refused the connection");
	}
	*peer_side = side[1];
	return side[0];
}

int Host::MrLookup(void *user, uint32_t key, uint64_t addr, uint32_t len, unsigned access,
		   uint8_t **host)
{
	Host *h = static_cast<Qp *>(user)->host;

	(void)access; /* the region grants everything: a workload's keys are its own */
	if (key != h->key_ || addr < h->addr_ || len > h->mem_.size() ||
	    addr - h->addr_ > h->mem_.size() - len)
		return -1;
	*host = h->mem_.data() + (addr - h->addr_);
	return 0;
}

void Host::Complete(void *user, bool from_recv_queue, const mrc_completion *wc)
{
	Qp *qp = static_cast<Qp *>(user);

	if (qp->on_complete)
		qp->on_complete(from_recv_queue, *wc);
}

bool Host::MapSges(mrc_sge *sge, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		if (sge[i].addr < addr_ || sge[i].length > mem_.size() ||
		    sge[i].addr - addr_ > mem_.size() - sge[i].length)
			return false;
		sge[i].host = mem_.data() + (sge[i].addr - addr_);
		sge[i].lkey = key_;
	}
	return true;
}

int Host::Pumped(Qp *qp, int e)
{
	if (!e)
		Pump(qp);
	return e;
}

int Host::PostSend(Qp *qp, mrc_send_wr wr)
{
	return MapSges(wr.sge, wr.num_sge) ? Pumped(qp, mrc_conn_post_send(qp->conn, &wr))
					    : -EINVAL;
}

int Host::PostRecv(Qp *qp, mrc_recv_wr wr)
{
	return MapSges(wr.sge, wr.num_sge) ? Pumped(qp, mrc_conn_post_recv(qp->conn, &wr))
					    : -EINVAL;
}

void Host::Pump(Qp *qp)
{
	static uint8_t buf[DGRAM_MAX];
	mrc_tx_info tx;
	size_t len;
	uint64_t now = Now(), at;

	while (mrc_conn_send(qp->conn, buf, sizeof(buf), &tx, now, &len)) {
		Ptr<Packet> p = Create<Packet>(buf, (uint32_t)len);
		SocketIpTosTag tos;

		tos.SetTos(ECT0); /* IP takes the TOS from the tag, as a socket's SendTo sets it */
		p->AddPacketTag(tos);
		udp_->Send(p, planes_[tx.plane], qp->peer->PlaneAddr(tx.plane), tx.sport,
			   MRC_UDP_PORT_DEFAULT);
		sent_++;
	}
	Simulator::Cancel(qp->timer);
	at = mrc_conn_next_timeout(qp->conn);
	if (at != UINT64_MAX)
		qp->timer = Simulator::Schedule(NanoSeconds(at > now ? at - now : 0),
						&Host::OnTimer, this, qp);
}

void Host::OnTimer(Qp *qp)
{
	mrc_conn_on_timeout(qp->conn, Now());
	Pump(qp);
}

void Host::Receive(Ptr<Socket> socket)
{
	static uint8_t buf[DGRAM_MAX];
	Address from;
	Ptr<Packet> p;
	unsigned plane = 0;

	while (plane < rx_.size() && rx_[plane] != socket)
		plane++;
	while ((p = socket->RecvFrom(from))) {
		SocketIpTosTag tos;
		mrc_rx_info rx = {};
		mrc_packet pkt;
		uint32_t len = p->CopyData(buf, sizeof(buf));

		received_++;
		rx.plane = (uint8_t)plane;
		rx.sport = InetSocketAddress::ConvertFrom(from).GetPort();
		rx.ce = p->PeekPacketTag(tos) && (tos.GetTos() & 3) == 3;
		ce_ += rx.ce;
		if (len != p->GetSize() || mrc_decode(buf, len, &pkt) != MRC_WIRE_OK)
			continue; /* the engine's decoder refuses it: nothing to hand on */
		auto it = qps_.find(pkt.dst_qpn);

		if (it == qps_.end())
			continue; /* no such QP here */
		mrc_conn_recv_packet(it->second->conn, &rx, &pkt, Now());
		Pump(it->second.get());
	}
}

} // namespace metaroce_sim
