/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* What the core's files share among themselves; daemon/io sees only core.h. */
#ifndef METAROCE_DAEMON_CORE_INTERNAL_H
#define METAROCE_DAEMON_CORE_INTERNAL_H

#include "core/core.h"
#include "core/lock.h"
#include "core/shard.h"
#include <metaroce/cm.h>

#define MRCD_NOTIFY_RETRY_NS 1000000 /* an event a full channel refused is sent again after */
/* how long a QP, or a UD QP's next datagram, waits for its peer's discovery */
#define MRCD_RESOLVE_TIMEOUT_NS 2000000000ull
/* a peer's record older than this is asked back before a new QP binds to it */
#define MRCD_PEER_RECHECK_NS 1000000000ull

/* --- telling (tell.c) ---------------------------------------------------------------------- */

void core_log(struct mrcd_core *c, int priority, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* A monitor event, also logged. */
void core_event(struct mrcd_core *c, int priority, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* --- peers.c: this node to its peers ------------------------------------------------------- */

void core_node_info(const struct mrcd_core *c, uint64_t node_id, struct mrc_node_info *info);
/* The planes a node's announcement shares with ours (bit i: our plane i), less those it
 * drained; addr[i], when given, gets its address on plane i. */
uint32_t core_shared_planes(const struct mrcd_core *c, const struct mrc_node_info *info,
			    uint8_t (*addr)[16]);
/* The peer table's admission callback: the configuration's peer prefixes. */
bool core_admit(void *user, const uint8_t addr[16]);
/* An address as text, without the C library's network functions. */
const char *core_addr_str(const uint8_t a[16], char *buf, size_t len);
/* Discovery of the peer at addr begins (or goes on): 0, -EHOSTUNREACH when the configuration
 * does not admit it, -ENOMEM when the peer table is full. */
int core_discover_addr(struct mrcd_core *c, const uint8_t addr[16], uint64_t now);
/* What the peer table has to send (DISCOVER and its answers), to the wire. */
void core_send_daemon_packets(struct mrcd_core *c, uint64_t now);

/* --- users.c: what one uid may hold over all its connections -------------------------------- */

/* Root and the daemon's own user: no limit applies. */
bool core_user_exempt(const struct mrcd_core *c, uint32_t uid);
void core_user_usage(const struct mrcd_core *c, uint32_t uid,
		     uint64_t usage[MRC_CTL_USER_RESOURCES]);
/* The configured limits, autos resolved. */
void core_user_limits(const struct mrcd_core *c, uint64_t limits[MRC_CTL_USER_RESOURCES]);
/* 0 when uid may hold `more` of `what` beyond what it holds; else -EUSERS (connections) or
 * -EDQUOT, counted, and logged once a second at most naming the limit. */
int core_user_allows(struct mrcd_core *c, uint32_t uid, enum mrc_ctl_user_resource what,
		     uint64_t more);

/* --- objects.c: handles, regions, completion queues ---------------------------------------- */

uint32_t core_make_handle(struct mrcd_tables *t, unsigned slot);
struct mrcd_qp *core_qp_by_num(struct mrcd_tables *t, uint32_t qpn);
struct mrcd_cq *core_cq_by_handle(struct mrcd_tables *t, int owner, uint32_t handle);
struct mrcd_mr *core_mr_by_key(struct mrcd_tables *t, int owner, uint32_t key);
struct mrcd_mr *core_mr_of_qp(struct mrcd_tables *t, const struct mrcd_qp *qp, uint32_t key);
uint32_t core_owner_token(int owner, uint32_t pd);
struct mrcd_mr *core_key_slot(struct mrcd_tables *t, unsigned owner);
int core_reg_mr(struct mrcd_core *c, unsigned owner, const uint8_t *payload, size_t len,
		unsigned n_desc, struct mrc_ctl_mr *out);
void core_mr_deregister(struct mrcd_core *c, struct mrcd_mr *mr);
void core_mr_unmap(struct mrcd_core *c, struct mrcd_mr *mr);
/* Retired regions whose work is done are unmapped, at most once a millisecond. */
void core_reap_retired(struct mrcd_core *c, uint64_t now);
int core_create_cq(struct mrcd_core *c, unsigned owner, const uint8_t *payload, size_t len,
		   unsigned n_desc, struct mrc_ctl_cq *out);
void core_cq_free(struct mrcd_core *c, struct mrcd_cq *cq);
/* Events a full channel did not take, sent again (those the shard's QPs raised). */
void core_retry_notifications(struct mrcd_core *c, struct mrcd_shard *sh);
/* A ring this core formats in shared memory the client gets. */
int core_ring_new(struct mrcd_core *c, uint16_t kind, uint32_t entries, uint32_t qpn,
		  void **mem, size_t *len, struct mrc_ring *ring);
uint32_t core_ring_entries(uint32_t want);
/* The same, for want entries or more, with the channel (descriptor 0 of the request) kept as
 * *channel_out when `channel`: 0, or the error with nothing kept. */
int core_ring_with_channel(struct mrcd_core *c, uint16_t kind, uint32_t want, bool channel,
			   void **mem, size_t *len, struct mrc_ring *ring, int *channel_out);
/* A client's scatter element to host memory; `write` when the daemon will store into it. */
int core_local_sge(struct mrcd_core *c, const struct mrcd_qp *qp, const struct mrc_shm_sge *in,
		   bool write, struct mrc_sge *out);
/* The same for a buffer of the client's protection domain pd (an SRQ's receives). */
int core_local_sge_in(struct mrcd_core *c, int owner, uint32_t pd, const struct mrc_shm_sge *in,
		      bool write, struct mrc_sge *out);
/* Shared receive queues (srq.c). */
struct mrcd_srq *core_srq_by_handle(struct mrcd_tables *t, int owner, uint32_t handle);
int core_create_srq(struct mrcd_core *c, unsigned owner, const uint8_t *payload, size_t len,
		    unsigned n_desc, struct mrc_ctl_srq *out);
int core_modify_srq(struct mrcd_core *c, unsigned owner, const uint8_t *payload, size_t len);
int core_destroy_srq(struct mrcd_core *c, unsigned owner, uint32_t handle);
void core_srq_free(struct mrcd_core *c, struct mrcd_srq *s);
/* A message with receive sequence number rsn arrived at qp, an SRQ's: its receives, now. */
void core_srq_feed(struct mrcd_core *c, struct mrcd_qp *qp, uint32_t rsn, uint64_t now);
/* The SRQ's next receive, taken for good (1), none (0), or a corrupt ring (-1). */
int core_srq_take(struct mrcd_core *c, struct mrcd_srq *s, struct mrc_rq_entry *r);
/* The engine's callbacks, user = the QP (core_mr_lookup: windows.c). */
void core_on_complete(void *user, bool from_recv_queue, const struct mrc_completion *wc);
/* A completion the core makes itself (MRC_CQ_*), for the entry at ring index idx. */
void core_complete_now(struct mrcd_core *c, struct mrcd_qp *qp, bool recv, uint64_t wr_id,
		       uint32_t idx, uint8_t status, uint8_t opcode);
/* The same with every field the caller chose (a UD receive's source QP, GRH, immediate). */
void core_complete_entry(struct mrcd_core *c, struct mrcd_qp *qp, bool recv, uint32_t idx,
			 struct mrc_cq_entry *e);

/* --- windows.c: memory windows in the key table [SPEC 4.9] ------------------------------ */

int core_alloc_mw(struct mrcd_core *c, unsigned owner, const uint8_t *payload, size_t len,
		  struct mrc_ctl_mw *out);
int core_dealloc_mw(struct mrcd_core *c, unsigned owner, uint32_t key);
void core_mw_free(struct mrcd_core *c, struct mrcd_mr *w);
/* Send queue entries, done as the core takes them: MRC_CQ_SUCCESS or MRC_CQ_MW_BIND_ERR. */
int core_mw_bind(struct mrcd_core *c, struct mrcd_qp *qp, const struct mrc_sq_entry *e);
int core_mw_local_inv(struct mrcd_core *c, struct mrcd_qp *qp, const struct mrc_sq_entry *e);
void core_qp_windows_gone(struct mrcd_core *c, struct mrcd_qp *qp);
/* Engine callbacks, user = the QP: the peer's keys (a region's or a window's), SEND_INV. */
int core_mr_lookup(void *user, uint32_t key, uint64_t addr, uint32_t len, unsigned access,
		   uint8_t **host);
int core_may_invalidate(void *user, uint32_t key);
void core_invalidate(void *user, uint32_t key);

/* --- qp.c: queue pairs ------------------------------------------------------------------- */

/* The client's QP of `type` a request names by its leading qp_num (the struct copied into r);
 * NULL with *err when the request, the QP or its type is wrong. */
struct mrcd_qp *core_requested_qp(struct mrcd_core *c, unsigned owner, const uint8_t *payload,
				  size_t len, void *r, size_t size, uint8_t type, int *err);
bool core_is_local_addr(const struct mrcd_config *cfg, const uint8_t addr[16]);
/* A ring whose indices the client corrupted: the QP fails, the daemon carries on. */
void core_ring_corrupt(struct mrcd_core *c, struct mrcd_qp *qp, const char *which, uint64_t now);

int core_create_qp(struct mrcd_core *c, unsigned owner, const uint8_t *payload, size_t len,
		   struct mrc_ctl_qp_created *out);
int core_connect_qp(struct mrcd_core *c, unsigned owner, const uint8_t *payload, size_t len,
		    uint64_t now);
int core_ready_qp(struct mrcd_core *c, unsigned owner, const uint8_t *payload, size_t len,
		  uint64_t now);
/* Verbs' RTS to RTS (MRC_CTL_MODIFY_QP). */
int core_modify_qp(struct mrcd_core *c, unsigned owner, const uint8_t *payload, size_t len);
void core_qp_error(struct mrcd_core *c, struct mrcd_qp *qp, uint64_t now);
/* Destroyed, or its client went: its connection lingers (SPEC 11.4). */
void core_qp_free(struct mrcd_core *c, struct mrcd_qp *qp, uint64_t now);
/* Ring entries into the engine, and flushes once in error. */
void core_drain_rings(struct mrcd_core *c, struct mrcd_qp *qp, uint64_t now);
/* Only the receive ring, which rings no doorbell while the QP works: read when a packet
 * that may consume a receive arrives, besides every visit. */
void core_drain_receives(struct mrcd_core *c, struct mrcd_qp *qp, uint64_t now);
/* The program's READs in step with the engine's send queue: those completed (or all, the
 * QP failed) out, before the application can hear of them; adding, those whose requests
 * went since in (xdp.h). */
void core_fast_reads_sync(struct mrcd_core *c, struct mrcd_qp *qp, bool adding);
void core_apply_drains(struct mrcd_core *c, struct mrcd_qp *qp);
/* A peer's discovery finished, changed or failed: QPs waiting on it go on. */
void core_peers_changed(struct mrcd_core *c, unsigned peer, int event, uint64_t now);

/* --- ud.c: UD QPs (SPEC 4.8) ------------------------------------------------------------- */

/* MRC_CTL_UD_QP: a UD QP to RTR or RTS, or its new qkey. */
int core_ud_qp(struct mrcd_core *c, unsigned owner, const uint8_t *payload, size_t len);
/* MRC_CTL_RESOLVE (ibv_create_ah): discovery of an address begins. */
int core_resolve(struct mrcd_core *c, const uint8_t *payload, size_t len, uint64_t now);
/* The QP's next datagram into buf and *g; false when it has none to send now. */
bool core_ud_next(struct mrcd_core *c, struct mrcd_qp *qp, uint8_t *buf, size_t cap,
		  struct mrcd_dgram *g, uint64_t now);
/* Whether datagrams to dgid can go along *rt (remembered until the destination or the peer
 * table changes, so a QP talking to one peer finds it without a search): READY, WAIT for
 * discovery, or NONE; `expired`: discovery had its time, what there is must do. */
enum core_route { ROUTE_READY, ROUTE_WAIT, ROUTE_NONE };
enum core_route core_ud_route(struct mrcd_core *c, struct mrcd_ud_route *rt,
			      const uint8_t dgid[16], bool expired, uint64_t now);
/* A datagram along a ready route, its payload already behind the headers' room in buf: the
 * headers, the authentication trailer, the flow's path and the address into *g. */
struct mrc_ud_datagram;
void core_ud_emit(struct mrcd_core *c, const struct mrcd_ud_route *rt,
		  struct mrc_ud_datagram *d, uint32_t flow, uint8_t *buf, size_t cap,
		  struct mrcd_dgram *g);
/* A UD datagram's tag is right under the key of the peer its source belongs to; sealed, *pkt
 * becomes *opened, decrypted into a scratch that lasts until the next is opened. */
bool core_ud_authentic(const struct mrcd_core *c, const struct mrc_packet **pkt,
		       const struct mrcd_dgram *g, struct mrc_packet *opened);
/* A UD datagram arrived: delivered into the next receive, or dropped and counted. */
void core_ud_rx(struct mrcd_core *c, const struct mrc_packet *pkt, const struct mrcd_dgram *g,
		uint64_t now);

/* --- cm.c: the connection manager (SPEC 17) --------------------------------------------- */

int core_cm_init(struct mrcd_core *c);
void core_cm_fini(struct mrcd_core *c);
/* MRC_CTL_CM from a library client. */
int core_cm_request(struct mrcd_core *c, unsigned owner, const uint8_t *payload, size_t len,
		    unsigned n_desc, struct mrc_ctl_cm_reply *out, uint64_t now);
/* A UD datagram for QP 1: a peer's CM message. */
void core_cm_rx(struct mrcd_core *c, const struct mrc_packet *pkt, const struct mrcd_dgram *g,
		uint64_t now);
/* Its ids end as their destruction would end them, its channels close. */
void core_cm_client_close(struct mrcd_core *c, unsigned slot, uint64_t now);
/* Discovery answered, gave up or saw a restart: routes wait no more, connections end. */
void core_cm_peer_event(struct mrcd_core *c, unsigned peer, int ev, uint64_t old_node,
			uint64_t now);
void core_cm_pump(struct mrcd_core *c, uint64_t now);
uint64_t core_cm_next_timeout(const struct mrcd_core *c);
/* Stopping: a DREQ to each connection's peer, once. */
void core_cm_flush_all(struct mrcd_core *c, uint64_t now);

/* --- pump.c -------------------------------------------------------------------------------- */

/* Something changed for the QP outside its visit (a request, a peer, an operator): the pump
 * visits it at its next turn. */
static inline void core_qp_touch(struct mrcd_core *c, const struct mrcd_qp *qp)
{
	mrcd_sched_ready(&c->shard[qp->shard].sched, (unsigned)(qp - c->t.qps));
}

static inline struct mrcd_shard *core_shard_of(struct mrcd_core *c, const struct mrcd_qp *qp)
{
	return &c->shard[qp->shard];
}

/* The QP's transport failed it (retries spent, the peer's CLOSE or error): the rdma_cm
 * connection it carries ends at the manager's next turn. */
static inline void core_qp_failed_by_transport(struct mrcd_core *c, struct mrcd_qp *qp)
{
	struct mrcd_shard *sh = core_shard_of(c, qp);

	if (qp->cm_id && sh->n_cm_failed < MRCD_MAX_QPS) {
		sh->cm_failed[sh->n_cm_failed++] = qp->cm_id;
		__atomic_store_n(&sh->control_due, true, __ATOMIC_RELEASE);
	}
	qp->cm_id = 0;
}

/* A QP-level packet for one of the shard's QPs (or one lingering). False when none took it. */
bool core_qp_rx(struct mrcd_core *c, struct mrcd_shard *sh, const struct mrc_packet *pkt,
		const struct mrcd_dgram *g, uint64_t now);
unsigned core_qps_pump(struct mrcd_core *c, struct mrcd_shard *sh, uint64_t now); /* visits */
uint64_t core_qps_next_timeout(const struct mrcd_core *c, const struct mrcd_shard *sh);
/* The worker is about to sleep: doorbells wanted again; false if work came meanwhile. */
bool core_qps_idle(struct mrcd_core *c, struct mrcd_shard *sh);

#endif /* METAROCE_DAEMON_CORE_INTERNAL_H */
