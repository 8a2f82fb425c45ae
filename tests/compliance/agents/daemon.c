/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * compliance-agent-daemon: metaroced as an implementation under test, behind the agent
 * protocol (agent.h). The QP is a verbs QP made through libmetaroce, as any application makes
 * one; the suite's peer is this process's UDP sockets on the peer's address, in real time.
 * The daemon picks its QPN, key and PSNs (R-116: from the node ids), so open() says them back.
 *
 * The peer the suite plays has a node: this agent answers the daemon's DISCOVERs for it
 * (SPEC 12), announcing its planes; each QP keeps to the planes its script asks for
 * (metaroce_qp_set_paths), so its paths fall on them as the script says. A script that plays
 * the peer's node itself (discovery=1) gets a peer at addresses the daemon has never heard
 * of, so its QP's DISCOVER is the daemon's first to them, and its discovery packets
 * pass both ways; a stranger's address, outside the daemon's peer prefixes, is at hand.
 *
 * Environment: METAROCE_SOCKET (the daemon's control socket), COMPLIANCE_IUT_ADDR (the
 * daemon's IPv4 address on each plane, comma-separated), COMPLIANCE_PEER_ADDR (this
 * process's, on the same links; several such lists separated by ';' for several agents at
 * once, as the scenario matrix starts: each takes the first it can bind, a node of its own),
 * COMPLIANCE_PORT (both MetaRoCE ports, 4792), COMPLIANCE_SETTLE_MS (200),
 * COMPLIANCE_FRESH_ADDR (address lists as COMPLIANCE_PEER_ADDR's, one per discovery script:
 * none, and such scripts are skipped; too few, and the last fail, saying so),
 * COMPLIANCE_STRANGER_ADDR (one address, outside the
 * daemon's peer prefixes), COMPLIANCE_NEIGHBOUR_ADDR (one inside them, no QP's peer).
 *
 * The daemon's QPs keep its own configuration where a verbs QP cannot set it (its congestion
 * window, its READ limits, at the port's MTU what the planes carry, R-99): own_defaults.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <infiniband/verbs.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <metaroce/ctl.h>
#include <metaroce/metaroce.h>

#include "compliance/agent.h"
#include "compliance/agents/ip_headers.h"
#include "compliance/agents/more_verbs.h"
#include "compliance/agents/peer_auth.h"
#include "compliance/agents/peer_sockets.h"
#include "proto/codec.h"
#include "proto/conn.h"
#include "verbs/ctl_client.h"

#define MAX_FRESH 12u
#define MAX_PLANES 2u
#define METRICS_CAP (1u << 20) /* the exposition's bytes, with room for many paths */
#define OPEN_WAIT_NS 5000000000ull

struct daemon_iut {
	struct iut_config cfg;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_ah *ah; /* a UD QP's, to the peer */
	struct ibv_mw *mw; /* the window the peer's key names (cfg.mw) */
	struct ibv_mr *mr;
	uint8_t *mem;
	size_t mapped;
	uint64_t t0_real, t0_script; /* the script's time t is real time t0_real + t - t0_script */
	char *base_metrics;	      /* the counters when the QP was made */
	uint64_t base_retx, base_rx;
	uint8_t drained; /* planes this script drained: restored when it ends */
	struct in_addr peer[MAX_PLANES]; /* the QP's peer: the agent's node, or a fresh one */
	struct iut_dgram held;		 /* its node's first DISCOVER, seen in open() */
	bool has_held;
};

/* What lasts the whole run: the device, the two nodes (the sockets: peer_sockets.c). */
static struct {
	struct ibv_context *ctx;
	int ctl;
	struct in_addr iut_addr[MAX_PLANES], peer_addr[MAX_PLANES];
	unsigned n_planes;
	uint16_t port;
	uint64_t node, iut_node; /* the peer's node id, and the daemon's once it asked */
	/* discovery scripts' peers, each used once; a stranger; a neighbour; the open QP */
	struct in_addr fresh[MAX_FRESH][MAX_PLANES], stranger, neighbour;
	unsigned n_fresh, used_fresh;
	const struct daemon_iut *current;
} g;

/* The daemon's DISCOVER answered for the peer's node: its planes' addresses, its port. */
static void answer_discover(const struct mrc_packet *ask, uint8_t plane, uint16_t to_port)
{
	struct mrc_packet p = { .opcode = MRC_OP_DISCOVER_REPLY, .dst_qpn = MRC_QPN_DAEMON,
				.psn = ask->psn };
	uint8_t buf[512];
	size_t len;

	g.iut_node = ask->u.discover.node_id;
	p.u.discover.node_id = g.node;
	p.u.discover.udp_port = g.port;
	p.u.discover.max_payload = 4096; /* each QP's path MTU says its own */
	p.u.discover.n_addrs = (uint8_t)g.n_planes;
	for (unsigned i = 0; i < g.n_planes; i++) {
		p.u.discover.addrs[i].family = MRC_AF_INET;
		p.u.discover.addrs[i].plane = (uint8_t)i;
		memset(p.u.discover.addrs[i].addr + 10, 0xff, 2);
		memcpy(p.u.discover.addrs[i].addr + 12, &g.peer_addr[i], 4);
	}
	if (peer_auth_on())
		p.flags = MRC_F_AUTH; /* its public key and tag behind */
	if (mrc_encode(&p, buf, sizeof(buf) - MRC_AUTH_PUBLIC_KEY_LEN - MRC_AUTH_DISCOVER_TAG_LEN,
		       &len) != MRC_WIRE_OK)
		return;
	if (peer_auth_on()) {
		uint8_t iut[16];

		v4_mapped(g.iut_addr[plane], iut);
		if (!(len = peer_auth_seal_reply(ask, iut, buf, len)))
			return;
	}
	peer_socket_send(g.peer_addr[plane], plane, g.port, g.iut_addr[plane], to_port, false, buf,
			 len);
}

/* Whether a socket's address is the agent's own node's (not a discovery script's). */
static bool is_own_node_socket(const struct peer_socket *s)
{
	for (unsigned p = 0; p < g.n_planes; p++)
		if (s->addr.s_addr == g.peer_addr[p].s_addr)
			return true;
	return false;
}

/* Whether a socket's address is the open QP's peer's, the stranger's or the neighbour's: the
 * script's. */
static bool is_script_socket(const struct peer_socket *s)
{
	for (unsigned p = 0; g.current && p < g.n_planes; p++)
		if (s->addr.s_addr == g.current->peer[p].s_addr)
			return true;
	return s->addr.s_addr == g.stranger.s_addr || s->addr.s_addr == g.neighbour.s_addr;
}

/* The next datagram the daemon sent the peer, the agent's node's DISCOVERs answered on the
 * way, a gone discovery script's peer's dropped; false: none. */
static bool receive(struct iut_dgram *d)
{
	for (unsigned i = 0; i < peer_sockets_count(); i++) {
		const struct peer_socket *sock = peer_socket_at(i);
		struct sockaddr_in from;
		struct iovec iov = { d->bytes, sizeof(d->bytes) };
		union {
			char buf[CMSG_SPACE(sizeof(int)) * 2];
			struct cmsghdr align;
		} c;
		struct msghdr m = { .msg_name = &from, .msg_namelen = sizeof(from),
				    .msg_iov = &iov, .msg_iovlen = 1, .msg_control = c.buf,
				    .msg_controllen = sizeof(c.buf) };
		struct mrc_packet p;
		ssize_t n;

		while ((n = recvmsg(sock->fd, &m, 0)) >= 0) {
			d->len = (uint16_t)n;
			d->plane = sock->plane;
			d->sport = ntohs(from.sin_port);
			d->ce = false;
			d->ecn = IUT_ECN_UNKNOWN;
			d->df = (int8_t)ip_headers_df(from.sin_addr, d->sport, sock->addr,
						      sock->port, d->bytes, (size_t)n);
			v4_mapped(sock->addr, d->addr);
			d->dport = sock->port;
			for (struct cmsghdr *cm = CMSG_FIRSTHDR(&m); cm; cm = CMSG_NXTHDR(&m, cm))
				if (cm->cmsg_level == IPPROTO_IP && cm->cmsg_type == IP_TOS)
					d->ecn = *(uint8_t *)CMSG_DATA(cm) & 3;
			d->ce = d->ecn == 3;
			if (!is_own_node_socket(sock)) {
				if (is_script_socket(sock))
					return true;
				m.msg_controllen = sizeof(c.buf);
				continue;
			}
			if (n >= 2 && d->bytes[1] == MRC_OP_DISCOVER &&
			    mrc_decode(d->bytes, (size_t)n, &p) == MRC_WIRE_OK) {
				answer_discover(&p, d->plane, p.u.discover.udp_port
									      ? p.u.discover.udp_port
									      : d->sport);
				m.msg_controllen = sizeof(c.buf);
				continue;
			}
			if (n >= 2 && d->bytes[1] == MRC_OP_DISCOVER_REPLY) {
				m.msg_controllen = sizeof(c.buf);
				continue;
			}
			return true;
		}
	}
	return false;
}

static int ctl_text(uint16_t type, char *out, size_t cap)
{
	memset(out, 0, cap);
	return ctl_request(g.ctl, type, NULL, 0, NULL, 0, out, cap - 1, NULL, 0);
}

/* The daemon's record of the QP; false when it has none. */
static bool qp_record(uint32_t qpn, struct mrc_ctl_qp *out)
{
	static struct mrc_ctl_qp qps[256];

	memset(qps, 0, sizeof(qps));
	if (ctl_request(g.ctl, MRC_CTL_QPS, NULL, 0, NULL, 0, qps, sizeof(qps), NULL, 0))
		return false;
	for (unsigned i = 0; i < sizeof(qps) / sizeof(qps[0]) && qps[i].qp_num; i++)
		if (qps[i].qp_num == qpn) {
			*out = qps[i];
			return true;
		}
	return false;
}

static void daemon_close(void *iut);

static void *fail_open(struct daemon_iut *d, int err, char *msg, size_t len, const char *what)
{
	snprintf(msg, len, "%s: %s", what, strerror(err));
	daemon_close(d);
	errno = EIO;
	return NULL;
}

/* verbs RTR to RTS, with the script's retry limits */
static int to_rts(struct daemon_iut *d)
{
	struct ibv_qp_attr rts = { .qp_state = IBV_QPS_RTS, .timeout = 14,
				   .retry_cnt = d->cfg.retry_cnt, .rnr_retry = d->cfg.rnr_retry,
				   .sq_psn = d->cfg.psn, .max_rd_atomic = 16 };

	return ibv_modify_qp(d->qp, &rts, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
						  IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
						  IBV_QP_MAX_QP_RD_ATOMIC);
}

static bool connect_qp(struct daemon_iut *d, const struct iut_config *c, const char **step)
{
	struct ibv_qp_attr init = { .qp_state = IBV_QPS_INIT, .port_num = 1,
				    .qp_access_flags =
					    (c->qp_remote_write ? IBV_ACCESS_REMOTE_WRITE : 0) |
					    (c->qp_remote_read ? IBV_ACCESS_REMOTE_READ : 0) |
					    (c->qp_remote_atomic ? IBV_ACCESS_REMOTE_ATOMIC : 0) };
	struct ibv_qp_attr rtr = {
		.qp_state = IBV_QPS_RTR, .path_mtu = verbs_mtu_of(c->max_payload),
		.dest_qp_num = c->peer_qpn, .rq_psn = c->peer_psn, .max_dest_rd_atomic = 16,
		.min_rnr_timer = 1,
		.ah_attr = { .is_global = 1, .port_num = 1, .grh = { .hop_limit = 1 } },
	};

	memset(rtr.ah_attr.grh.dgid.raw + 10, 0xff, 2);
	memcpy(rtr.ah_attr.grh.dgid.raw + 12, &d->peer[0], 4);
	*step = "connecting the QP: INIT";
	if (ibv_modify_qp(d->qp, &init, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
						IBV_QP_ACCESS_FLAGS))
		return false;
	*step = "metaroce_qp_set_paths";
	if ((errno = metaroce_qp_set_paths(d->qp, c->n_paths / c->n_planes,
					   (1u << c->n_planes) - 1)))
		return false;
	*step = "connecting the QP: RTR";
	if (ibv_modify_qp(d->qp, &rtr, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
					       IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
					       IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
		return false;
	if (c->at_rtr)
		return true; /* ready() goes on */
	*step = "connecting the QP: RTS";
	return !to_rts(d);
}

static void *daemon_open(const struct iut_ops *self, struct iut_config *c, uint64_t now_ns,
			 char *err, size_t errlen)
{
	struct daemon_iut *d;
	struct ibv_qp_init_attr qa = { .qp_type = IBV_QPT_RC, .sq_sig_all = 1 };
	struct mrc_ctl_qp rec = { 0 };
	struct iut_dgram stray;
	const char *step = "";
	uint64_t until;
	long page = sysconf(_SC_PAGESIZE);
	int access = IBV_ACCESS_LOCAL_WRITE;

	(void)self;

	uint8_t want = c->at_rtr ? MRC_CTL_QP_RTR : MRC_CTL_QP_RTS;

	if (c->n_planes > g.n_planes) {
		snprintf(err, errlen, "the daemon here has %u plane%s", g.n_planes,
			 g.n_planes == 1 ? "" : "s");
		errno = EOPNOTSUPP;
		return NULL;
	}
	if (!verbs_mtu_of(c->max_payload) || !c->rq_depth || !c->mr_len) {
		snprintf(err, errlen, "a verbs QP has a path MTU of 256, 512, 1024, 2048 or 4096 "
			 "bytes (max_payload=%u), a receive queue and a region", c->max_payload);
		errno = EOPNOTSUPP;
		return NULL;
	}
	if (c->rx_capacity_kbps) {
		snprintf(err, errlen, "the daemon's receive capacity is its configuration's, one "
			 "for all its QPs");
		errno = EOPNOTSUPP;
		return NULL;
	}
	if (c->auth != peer_auth_on()) {
		snprintf(err, errlen, c->auth ? "this daemon authenticates nothing (auth=off): "
						"its authenticated run takes the case"
					      : "this daemon authenticates: only cases with setup "
						"auth=1 run on it");
		errno = EOPNOTSUPP;
		return NULL;
	}
	if (c->discovery && g.used_fresh == g.n_fresh) { /* daemon.sh must give more */
		snprintf(err, errlen, "no peer address left that the daemon has not discovered "
			 "(COMPLIANCE_FRESH_ADDR: %u, for as many discovery scripts)", g.n_fresh);
		errno = g.n_fresh ? EIO : EOPNOTSUPP;
		return NULL;
	}
	if (c->mw && c->at_rtr) {
		snprintf(err, errlen, "a window is bound through a QP in RTS: not with rtr=1");
		errno = EOPNOTSUPP;
		return NULL;
	}
	d = calloc(1, sizeof(*d));
	if (!d)
		return NULL;
	while (receive(&stray)) /* the last script's QP's last words */
		;
	memcpy(d->peer, c->discovery ? g.fresh[g.used_fresh++] : g.peer_addr, sizeof(d->peer));
	for (unsigned p = 0; p < g.n_planes; p++)
		if (peer_socket_for(d->peer[p], (uint8_t)p, g.port) < 0)
			return fail_open(d, errno, err, errlen, "binding the peer's port");
	g.current = d;
	d->cfg = *c;
	d->mapped = (c->mr_len + (size_t)page - 1) / (size_t)page * (size_t)page;
	/* the region where the script says, if that is free here; elsewhere it is renamed */
	d->mem = c->mr_addr % (uint64_t)page ? MAP_FAILED
		 : mmap((void *)(uintptr_t)c->mr_addr, d->mapped, PROT_READ | PROT_WRITE,
			MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	if (d->mem == MAP_FAILED)
		d->mem = mmap(NULL, d->mapped, PROT_READ | PROT_WRITE,
			      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (d->mem == MAP_FAILED) {
		d->mem = NULL;
		return fail_open(d, errno, err, errlen, "mmap");
	}
	access |= (c->mw ? IBV_ACCESS_MW_BIND : 0) |
		  (c->mr_remote_write ? IBV_ACCESS_REMOTE_WRITE : 0) |
		  (c->mr_remote_read ? IBV_ACCESS_REMOTE_READ : 0) |
		  (c->mr_remote_atomic ? IBV_ACCESS_REMOTE_ATOMIC : 0);
	if (!(d->pd = ibv_alloc_pd(g.ctx)))
		return fail_open(d, errno, err, errlen, "ibv_alloc_pd");
	if (!(d->mr = ibv_reg_mr(d->pd, d->mem, c->mr_len, access)))
		return fail_open(d, errno, err, errlen, "ibv_reg_mr");
	/* one queue for both: completions in the order the daemon made them */
	if (!(d->cq = ibv_create_cq(g.ctx, 1024, NULL, NULL, 0)))
		return fail_open(d, errno, err, errlen, "ibv_create_cq");
	qa.send_cq = qa.recv_cq = d->cq;
	if (c->ud) {
		qa.qp_type = IBV_QPT_UD;
		want = MRC_CTL_QP_RTS;
	}
	qa.cap = (struct ibv_qp_cap){ .max_send_wr = 256, .max_recv_wr = c->rq_depth,
				      .max_send_sge = 1, .max_recv_sge = 1 };
	if (!(d->qp = ibv_create_qp(d->pd, &qa)))
		return fail_open(d, errno, err, errlen, "ibv_create_qp");
	if (c->ud && (errno = ud_ready(d->qp, c->qkey, c->psn)))
		return fail_open(d, errno, err, errlen, "readying the UD QP");
	if (c->ud && !(d->ah = ud_peer(d->pd, d->peer[0])))
		return fail_open(d, errno, err, errlen, "ibv_create_ah");
	if (!c->ud && !connect_qp(d, c, &step))
		return fail_open(d, errno, err, errlen, step);
	/* the daemon asks the peer's node for its planes first: answered by receive(), or with
	 * discovery=1 by the script, its DISCOVER held for it */
	for (until = agent_clock_ns() + OPEN_WAIT_NS; agent_clock_ns() < until;) {
		struct timespec ms = { 0, 1000000 };

		if (c->discovery ? d->has_held
				 : qp_record(d->qp->qp_num, &rec) && rec.state == want &&
					   (g.iut_node || c->ud))
			break;
		while (!d->has_held && receive(&stray))
			if (c->discovery && stray.bytes[1] == MRC_OP_DISCOVER &&
			    !memcmp(stray.addr + 12, &d->peer[0], 4)) {
				d->held = stray;
				d->has_held = true;
			}
		nanosleep(&ms, NULL);
	}
	if (c->discovery && d->has_held) {
		struct mrc_packet p;

		if (mrc_decode(d->held.bytes, d->held.len, &p) == MRC_WIRE_OK) {
			g.iut_node = p.u.discover.node_id;
			rec.state = want;
		}
	}
	if (rec.state != want || (!g.iut_node && !c->ud)) {
		snprintf(err, errlen, "the daemon's QP %u did not reach %s in %llu s (state %u%s)",
			 d->qp->qp_num, c->at_rtr ? "RTR" : "RTS", OPEN_WAIT_NS / 1000000000ull,
			 rec.state,
			 g.iut_node ? "" : ", no DISCOVER from it");
		daemon_close(d);
		errno = EIO;
		return NULL;
	}
	c->qpn = d->qp->qp_num;
	if (!c->discovery)
		c->peer_node_id = g.node;
	c->node_id = g.iut_node;
	if (!c->ud) { /* a UD QP's psn is the sq_psn it was given, a datagram count */
		c->psn = mrc_initial_psn(g.iut_node, c->qpn, c->peer_node_id, c->peer_qpn);
		c->peer_psn = mrc_initial_psn(c->peer_node_id, c->peer_qpn, g.iut_node, c->qpn);
	}
	/* authenticated, the QP's keys and PSNs come from the nodes' sessions; a script
	 * that is the peer's node takes the cluster key and the daemon's public key */
	if (c->auth) {
		struct mrc_packet held;
		bool keyed = c->discovery ? d->has_held &&
						    mrc_decode(d->held.bytes, d->held.len, &held) ==
							    MRC_WIRE_OK &&
						    peer_auth_cluster(c, &held)
					  : peer_auth_qp(c, c->peer_node_id, g.iut_node);

		if (!keyed) {
			snprintf(err, errlen, "the daemon showed no public key");
			daemon_close(d);
			errno = EIO;
			return NULL;
		}
	}
	c->port = g.port;
	for (unsigned p = 0; p < g.n_planes; p++) {
		v4_mapped(g.iut_addr[p], c->addr[p]);
		v4_mapped(d->peer[p], c->peer_addr[p]);
	}
	v4_mapped(g.stranger, c->stranger_addr);
	v4_mapped(g.neighbour, c->neighbour_addr);
	c->mr_key = d->mr->rkey;
	if (c->mw && !c->at_rtr &&
	    !(d->mw = window_bound(d->pd, d->qp, d->cq, d->mr,
				   access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
					     IBV_ACCESS_REMOTE_ATOMIC))))
		return fail_open(d, errno, err, errlen, "binding a type 2 window");
	if (d->mw)
		c->mr_key = d->mw->rkey; /* the peer's key names the window */
	c->mr_addr = (uintptr_t)d->mem;
	d->cfg = *c;
	d->base_metrics = malloc(METRICS_CAP);
	if (d->base_metrics && ctl_text(MRC_CTL_METRICS, d->base_metrics, METRICS_CAP)) {
		free(d->base_metrics);
		d->base_metrics = NULL; /* rx_dropped is then not kept */
	}
	d->base_retx = rec.tx_retransmits;
	d->base_rx = rec.rx_packets;
	d->t0_real = agent_clock_ns();
	d->t0_script = now_ns;
	return d;
}

static int drain_plane(uint8_t plane, bool drained)
{
	struct mrc_ctl_drain r = { .plane = plane, .drained = drained };

	return ctl_request(g.ctl, MRC_CTL_DRAIN_PLANE, &r, sizeof(r), NULL, 0, NULL, 0, NULL, 0);
}

static void daemon_close(void *iut)
{
	struct daemon_iut *d = iut;

	for (unsigned p = 0; p < MAX_PLANES; p++)
		if (d->drained >> p & 1)
			drain_plane((uint8_t)p, false); /* the next script finds every plane up */
	if (g.current == d)
		g.current = NULL;
	if (d->cfg.discovery) /* its peer's addresses are never used again */
		peer_sockets_forget(d->peer, g.n_planes);
	if (d->qp)
		ibv_destroy_qp(d->qp);
	if (d->mw)
		ibv_dealloc_mw(d->mw);
	if (d->ah)
		ibv_destroy_ah(d->ah);
	if (d->cq)
		ibv_destroy_cq(d->cq);
	if (d->mr)
		ibv_dereg_mr(d->mr);
	if (d->pd)
		ibv_dealloc_pd(d->pd);
	if (d->mem)
		munmap(d->mem, d->mapped);
	free(d->base_metrics);
	free(d);
}

static void daemon_deliver(void *iut, const struct iut_dgram *dg, uint64_t now_ns)
{
	struct daemon_iut *d = iut;
	struct in_addr from;
	struct mrc_packet p;
	int e;

	(void)now_ns;
	if (dg->plane >= g.n_planes)
		return;
	from = d->peer[dg->plane];
	if (is_v4_mapped(dg->addr))
		memcpy(&from, dg->addr + 12, 4);
	/* a node listens where it says it does: the port a DISCOVER* announces, at every plane
	 * address it announces */
	if (dg->len >= 2 &&
	    (dg->bytes[1] == MRC_OP_DISCOVER || dg->bytes[1] == MRC_OP_DISCOVER_REPLY) &&
	    mrc_decode(dg->bytes, dg->len, &p) == MRC_WIRE_OK && p.u.discover.udp_port) {
		peer_socket_for(from, dg->plane, p.u.discover.udp_port);
		for (unsigned k = 0; k < p.u.discover.n_addrs; k++) {
			struct in_addr a;

			memcpy(&a, p.u.discover.addrs[k].addr + 12, 4);
			if (p.u.discover.addrs[k].plane < g.n_planes &&
			    is_v4_mapped(p.u.discover.addrs[k].addr))
				peer_socket_for(a, p.u.discover.addrs[k].plane,
						p.u.discover.udp_port);
		}
	}
	if ((e = peer_socket_send(from, dg->plane, dg->sport, g.iut_addr[dg->plane], g.port,
				  dg->ce, dg->bytes, dg->len)))
		fprintf(stderr, "compliance-agent-daemon: a datagram from %s could not go: %s\n",
			inet_ntoa(from), strerror(-e));
}

static bool daemon_collect(void *iut, struct iut_dgram *dg, uint64_t now_ns)
{
	struct daemon_iut *d = iut;

	(void)now_ns;
	if (d->has_held) {
		*dg = d->held;
		d->has_held = false;
		return true;
	}
	return receive(dg);
}

static uint64_t daemon_deadline(void *iut)
{
	(void)iut;
	return UINT64_MAX; /* the daemon runs its timers itself */
}

static void daemon_advance(void *iut, uint64_t now_ns)
{
	struct daemon_iut *d = iut;
	uint64_t at = d->t0_real + (now_ns - d->t0_script);

	for (uint64_t now = agent_clock_ns(); now < at; now = agent_clock_ns()) {
		struct timespec ts = { (time_t)((at - now) / 1000000000ull),
				       (long)((at - now) % 1000000000ull) };

		nanosleep(&ts, NULL);
	}
}

static int daemon_post(void *iut, const struct iut_wr *wr, uint64_t now_ns)
{
	static const enum ibv_wr_opcode opcode[] = {
		[IUT_WR_WRITE] = IBV_WR_RDMA_WRITE, [IUT_WR_WRITE_IMM] = IBV_WR_RDMA_WRITE_WITH_IMM,
		[IUT_WR_SEND] = IBV_WR_SEND,	    [IUT_WR_SEND_IMM] = IBV_WR_SEND_WITH_IMM,
		[IUT_WR_READ] = IBV_WR_RDMA_READ,
	};
	struct daemon_iut *d = iut;
	struct ibv_sge sge = { .addr = (uintptr_t)d->mem + wr->off, .length = wr->len,
			       .lkey = d->mr->lkey };
	int e;

	(void)now_ns;
	if (!d->qp || wr->off > d->cfg.mr_len || wr->len > d->cfg.mr_len - wr->off)
		return -EINVAL;
	if (wr->kind == IUT_WR_RECV) {
		struct ibv_recv_wr r = { .wr_id = wr->wr_id, .sg_list = &sge, .num_sge = 1 }, *bad;

		e = ibv_post_recv(d->qp, &r, &bad);
	} else if (wr->kind == IUT_WR_LOCAL_INV) {
		e = window_invalidate(d->qp, wr->rkey, wr->wr_id);
	} else if (d->cfg.ud) {
		if (wr->kind != IUT_WR_SEND && wr->kind != IUT_WR_SEND_IMM)
			return -EINVAL; /* a UD QP sends, nothing else */
		e = ud_send(d->qp, d->ah, d->cfg.peer_qpn, d->cfg.peer_qkey, &sge, wr->wr_id,
			    wr->kind == IUT_WR_SEND_IMM, wr->imm, wr->solicited);
	} else {
		struct ibv_send_wr s = { .wr_id = wr->wr_id, .sg_list = &sge, .num_sge = 1,
					 .opcode = opcode[wr->kind],
					 .send_flags = IBV_SEND_SIGNALED |
						       (wr->solicited ? IBV_SEND_SOLICITED : 0),
					 .imm_data = htonl(wr->imm) },
				   *bad;

		s.wr.rdma.remote_addr = wr->raddr;
		s.wr.rdma.rkey = wr->rkey;
		e = ibv_post_send(d->qp, &s, &bad);
	}
	return e > 0 ? -e : e;
}

static bool daemon_poll(void *iut, struct iut_wc *wc)
{
	struct daemon_iut *d = iut;
	struct ibv_wc w;

	if (ibv_poll_cq(d->cq, 1, &w) != 1)
		return false;
	memset(wc, 0, sizeof(*wc));
	wc->wr_id = w.wr_id;
	snprintf(wc->status, sizeof(wc->status), "%s", verbs_status_name(w.status));
	/* verbs leaves a failed completion's opcode undefined; the suite's name is then "?" */
	snprintf(wc->opcode, sizeof(wc->opcode), "%s", verbs_opcode_name(w.opcode));
	wc->recv = (w.opcode & IBV_WC_RECV) != 0;
	wc->byte_len = w.byte_len;
	wc->with_imm = (w.wc_flags & IBV_WC_WITH_IMM) != 0;
	wc->imm = wc->with_imm ? ntohl(w.imm_data) : 0;
	wc->with_inv = (w.wc_flags & IBV_WC_WITH_INV) != 0;
	wc->inv_rkey = wc->with_inv ? w.invalidated_rkey : 0;
	return true;
}

/* The sum of every sample of the metric family (or of one sample, named with its labels) in a
 * Prometheus text; 0 when absent. */
static uint64_t metric_sum(const char *text, const char *family)
{
	size_t n = strlen(family);
	uint64_t sum = 0;

	for (const char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		const char *value = strpbrk(l, " \n");

		if (!strncmp(l, family, n) && (l[n] == ' ' || l[n] == '{') && value && *value == ' ')
			sum += strtoull(value + 1, NULL, 10);
	}
	return sum;
}

static const char *daemon_state(void *iut)
{
	static const char *const names[] = { [MRC_CTL_QP_IDLE] = "init",
					     [MRC_CTL_QP_RESOLVING] = "resolving",
					     [MRC_CTL_QP_RTR] = "rtr", [MRC_CTL_QP_RTS] = "rts",
					     [MRC_CTL_QP_ERR] = "err" };
	struct daemon_iut *d = iut;
	struct mrc_ctl_qp rec;

	/* destroyed: the daemon lets it linger, but tells no one its state QP by QP (its count of
	 * lingering QPs holds the earlier scripts' too): not to be told */
	if (!d->qp)
		return NULL;
	if (!qp_record(d->cfg.qpn, &rec))
		return "gone";
	return rec.state < sizeof(names) / sizeof(names[0]) ? names[rec.state] : "?";
}

/*
 * The daemon's counters that mean what the engine's of the same names do, since the QP was
 * made: its packets received and retransmitted, and every packet it refused (rx_dropped: the
 * decoder's, a QP's, one for no QP, and those the XDP program refuses before the daemon
 * sees them). The daemon counts decoder refusals as one (metaroce_rx_malformed_total), so
 * dropped_e_* are not kept here.
 */
static bool daemon_counter(void *iut, const char *name, uint64_t *value)
{
	static const char *const dropped[] = {
		"metaroce_rx_malformed_total", "metaroce_qp_rx_dropped_total",
		"metaroce_rx_no_qp_total",
		/* the XDP program's refusals (its duplicates go on to the engine as events) */
		"metaroce_xdp_packets_total{outcome=\"truncated\"}",
		"metaroce_xdp_packets_total{outcome=\"bad_checksum\"}",
		"metaroce_xdp_packets_total{outcome=\"bad_tag\"}",
		"metaroce_xdp_packets_total{outcome=\"above_window\"}",
	};
	struct daemon_iut *d = iut;
	struct mrc_ctl_qp rec;
	static char *now;

	if (!strcmp(name, "tx_retransmits") || !strcmp(name, "rx_packets")) {
		if (!qp_record(d->cfg.qpn, &rec))
			return false;
		*value = name[0] == 't' ? rec.tx_retransmits - d->base_retx
					: rec.rx_packets - d->base_rx;
		return true;
	}
	if (!now)
		now = malloc(METRICS_CAP);
	if ((strcmp(name, "rx_dropped") && strcmp(name, "unauthenticated") &&
	     strncmp(name, "discover_", 9)) ||
	    !d->base_metrics || !now || ctl_text(MRC_CTL_METRICS, now, METRICS_CAP))
		return false;
	if (!strcmp(name, "unauthenticated")) { /* by the engine, or the XDP program */
		static const char *const refused[] = {
			"metaroce_qp_rx_dropped_total{reason=\"unauthenticated\"}",
			"metaroce_xdp_packets_total{outcome=\"bad_tag\"}",
		};

		*value = 0;
		for (unsigned i = 0; i < 2; i++)
			*value += metric_sum(now, refused[i]) -
				  metric_sum(d->base_metrics, refused[i]);
		return true;
	}
	if (!strncmp(name, "discover_", 9)) { /* discovery's refusals, by reason */
		char metric[96];

		snprintf(metric, sizeof(metric), "metaroce_discovery_refused_total{reason=\"%s\"}",
			 name + 9);
		if (!strstr(now, metric))
			return false; /* no such reason: not a counter it keeps */
		*value = metric_sum(now, metric) - metric_sum(d->base_metrics, metric);
		return true;
	}
	*value = 0;
	for (unsigned i = 0; i < sizeof(dropped) / sizeof(dropped[0]); i++)
		*value += metric_sum(now, dropped[i]) - metric_sum(d->base_metrics, dropped[i]);
	return true;
}

static bool daemon_memory(void *iut, uint32_t off, uint32_t len, uint8_t *out)
{
	struct daemon_iut *d = iut;

	if (off > d->cfg.mr_len || len > d->cfg.mr_len - off)
		return false;
	memcpy(out, d->mem + off, len);
	return true;
}

static void daemon_fill(void *iut, uint32_t off, uint32_t len, uint8_t value)
{
	struct daemon_iut *d = iut;

	if (off <= d->cfg.mr_len && len <= d->cfg.mr_len - off)
		memset(d->mem + off, value, len);
}

/* An operator drains a plane, or restores it (metaroce-ctl path set plane N down|up). */
static int daemon_drain(void *iut, uint8_t plane, bool drained, uint64_t now_ns)
{
	struct daemon_iut *d = iut;
	int e;

	(void)now_ns;
	if (plane >= MAX_PLANES)
		return -EINVAL;
	e = drain_plane(plane, drained);
	if (!e)
		d->drained = (uint8_t)(drained ? d->drained | 1u << plane : d->drained & ~(1u << plane));
	return e;
}

/* The application destroys the QP; the daemon lets it linger (SPEC 11.4), its packets still
 * the suite's to take. */
static int daemon_destroy(void *iut, uint64_t now_ns)
{
	struct daemon_iut *d = iut;
	int e;

	(void)now_ns;
	if (!d->qp)
		return -EINVAL;
	e = ibv_destroy_qp(d->qp);
	if (e)
		return -e;
	d->qp = NULL;
	return 0;
}

/* One more region, as the first was registered, let go at once: its key is all that counts */
static int daemon_register(void *iut, uint32_t *key, uint64_t now_ns)
{
	struct daemon_iut *d = iut;
	struct ibv_mr *mr = ibv_reg_mr(d->pd, d->mem, d->cfg.mr_len,
				       IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);

	(void)now_ns;
	if (!mr)
		return errno ? -errno : -EIO;
	*key = mr->rkey;
	ibv_dereg_mr(mr);
	return 0;
}

static int daemon_ready(void *iut, uint64_t now_ns)
{
	int e;

	(void)now_ns;
	if (!((struct daemon_iut *)iut)->qp)
		return -EINVAL; /* destroyed */
	e = to_rts(iut);
	return e > 0 ? -e : e;
}

static struct iut_ops daemon_ops = {
	.name = "metaroced",
	.own_defaults = true,
	.node = true,
	.open = daemon_open,
	.close = daemon_close,
	.deliver = daemon_deliver,
	.collect = daemon_collect,
	.deadline = daemon_deadline,
	.advance = daemon_advance,
	.post = daemon_post,
	.poll = daemon_poll,
	.state = daemon_state,
	.counter = daemon_counter,
	.memory = daemon_memory,
	.fill = daemon_fill,
	.drain = daemon_drain,
	.destroy = daemon_destroy,
	.ready = daemon_ready,
	.register_region = daemon_register,
};

/* ADDR[,ADDR]: an IPv4 address a plane; how many there are (0: not such a list) */
static unsigned parse_addrs(const char *name, const char *text, struct in_addr *a)
{
	char list[64], *tok, *save;
	unsigned n = 0;

	snprintf(list, sizeof(list), "%s", text);
	for (tok = strtok_r(list, ",", &save); tok && n < MAX_PLANES;
	     tok = strtok_r(NULL, ",", &save))
		if (inet_pton(AF_INET, tok, &a[n++]) != 1)
			n = MAX_PLANES + 1;
	if (n && n <= MAX_PLANES)
		return n;
	fprintf(stderr, "compliance-agent-daemon: %s must be 1 to %u IPv4 addresses, one a "
			"plane\n", name, MAX_PLANES);
	return 0;
}

/* The first of the ';'-separated address lists whose MetaRoCE port is free: socks[plane]. */
static bool bind_peer(const char *lists)
{
	char copy[256], *set, *save;
	int fd = -EINVAL;

	snprintf(copy, sizeof(copy), "%s", lists);
	for (set = strtok_r(copy, ";", &save); set; set = strtok_r(NULL, ";", &save)) {
		if (parse_addrs("COMPLIANCE_PEER_ADDR", set, g.peer_addr) != g.n_planes)
			return false;
		fd = 0;
		for (unsigned p = 0; p < g.n_planes && fd >= 0; p++)
			fd = peer_socket_for(g.peer_addr[p], (uint8_t)p, g.port);
		if (fd >= 0)
			return true;
		peer_sockets_forget(NULL, 0);
	}
	fprintf(stderr, "compliance-agent-daemon: cannot bind the peer's port %u at any of %s: "
			"%s\n", g.port, lists, strerror(-fd));
	return false;
}

int main(int argc, char **argv)
{
	struct ibv_device **devs;
	const char *sock = getenv("METAROCE_SOCKET"), *v;
	struct mrc_ctl_status status;
	int n = 0;

	if (argc > 1) /* the name the report gives this run: metaroced-udp, -xdp */
		daemon_ops.name = argv[1];
	g.n_planes = parse_addrs("COMPLIANCE_IUT_ADDR", getenv("COMPLIANCE_IUT_ADDR") ?: "",
				 g.iut_addr);
	if (!sock || !g.n_planes || !getenv("COMPLIANCE_PEER_ADDR")) {
		fprintf(stderr, "compliance-agent-daemon: needs METAROCE_SOCKET, "
				"COMPLIANCE_IUT_ADDR and COMPLIANCE_PEER_ADDR\n");
		return 2;
	}
	g.port = (uint16_t)((v = getenv("COMPLIANCE_PORT")) ? atoi(v) : 4792);
	daemon_ops.settle_ns = (uint64_t)((v = getenv("COMPLIANCE_SETTLE_MS")) ? atoi(v) : 200) *
			       1000000ull;
	if (getrandom(&g.node, sizeof(g.node), 0) != sizeof(g.node) || !g.node)
		g.node = 0x5eed; /* any id will do: one per run, never 0 (R-116's unknown) */
	g.ctl = ctl_connect(sock);
	devs = ibv_get_device_list(&n);
	/* a first request at once: the daemon closes a connection silent for 2 s, and the
	 * matrix starts agents that wait for their scenario */
	if (g.ctl < 0 || ctl_request(g.ctl, MRC_CTL_STATUS, NULL, 0, NULL, 0, &status,
				     sizeof(status), NULL, 0) ||
	    !devs || n < 1 || !(g.ctx = ibv_open_device(devs[0]))) {
		fprintf(stderr, "compliance-agent-daemon: no metaroced at %s\n", sock);
		return 1;
	}
	ibv_free_device_list(devs);
	if (!bind_peer(getenv("COMPLIANCE_PEER_ADDR")))
		return 1;
	if ((v = getenv("COMPLIANCE_CLUSTER_KEY_FILE")) && !peer_auth_open(v)) {
		fprintf(stderr, "compliance-agent-daemon: no cluster key in %s: %s\n", v,
			strerror(errno));
		return 2;
	}
	if (!ip_headers_open()) /* then df= is not seen, and scripts that check it fail */
		fprintf(stderr, "compliance-agent-daemon: no packet socket (%s): the IP headers' "
				"DF bits go unseen\n", strerror(errno));
	if ((v = getenv("COMPLIANCE_FRESH_ADDR"))) {
		char copy[512], *set, *save;

		snprintf(copy, sizeof(copy), "%s", v);
		for (set = strtok_r(copy, ";", &save); set && g.n_fresh < MAX_FRESH;
		     set = strtok_r(NULL, ";", &save))
			if (parse_addrs("COMPLIANCE_FRESH_ADDR", set, g.fresh[g.n_fresh++]) !=
			    g.n_planes)
				return 2;
	}
	if (((v = getenv("COMPLIANCE_STRANGER_ADDR")) && inet_pton(AF_INET, v, &g.stranger) != 1) ||
	    ((v = getenv("COMPLIANCE_NEIGHBOUR_ADDR")) &&
	     inet_pton(AF_INET, v, &g.neighbour) != 1)) {
		fprintf(stderr, "compliance-agent-daemon: COMPLIANCE_STRANGER_ADDR and "
				"COMPLIANCE_NEIGHBOUR_ADDR are an IPv4 address each\n");
		return 2;
	}
	return agent_serve(&daemon_ops, stdin, stdout);
}
