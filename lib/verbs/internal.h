/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * libmetaroce: the libibverbs ABI over metaroced. Each verbs object is the public rdma-core
 * struct embedded first in ours, so the inline functions of <infiniband/verbs.h> (which call
 * through context->ops and verbs_context) reach this library, and a pointer the application
 * holds converts back with a cast.
 *
 *     ibv_open_device   one control connection to the daemon (HELLO with a doorbell eventfd,
 *                       answered with the doorbell page)
 *     ibv_reg_mr        the pages move under sealed memfds the daemon maps (shm/share.c)
 *     ibv_create_cq     a CQ ring the daemon produces into; a channel is a datagram socket
 *                       pair, the daemon holding one end and sending a byte per event
 *     ibv_create_qp     SQ and RQ rings this library produces into; the doorbell after a
 *                       post only when the daemon is not reading the ring (need-wakeup)
 *     ibv_modify_qp     verbs states are kept here; RTR connects the QP in the daemon, RTS
 *                       starts its send half
 */
#ifndef METAROCE_VERBS_INTERNAL_H
#define METAROCE_VERBS_INTERNAL_H

#include <infiniband/verbs.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include <metaroce/ctl.h>
#include <metaroce/shm.h>

#include "shm/ring.h"
#include "shm/spin.h"

#define MRV_DEVICE_NAME "metaroce0"
#define MRV_MAX_INLINE 256
#define MRV_MAX_RD_ATOM MRC_CTL_MAX_RD_ATOMIC
#define MRV_DEFAULT_SOCKET "/run/metaroce/metaroced.sock"

/* The daemon's control socket as this process reaches it (METAROCE_SOCKET overrides). */
const char *mrv_socket_path(void);

struct mrv_device {
	struct ibv_device ibdev; /* first: what ibv_get_device_list hands out */
	struct mrc_ctl_status status; /* as the daemon described itself when listed */
};

struct mrv_context {
	struct verbs_context vctx; /* ends in struct ibv_context */
	int ctl_fd;		   /* this context's control connection */
	int doorbell_fd;	   /* written when a post needs the daemon woken */
	struct mrc_doorbell_page *doorbells; /* which QPs the wakeup is for (shm.h) */
	pthread_mutex_t ctl_lock;  /* one request at a time on ctl_fd */
	uint32_t seq;
	struct mrc_ctl_status status;
	bool dead;		   /* the daemon went away (fatal.c) */
	uint64_t next_liveness_ns; /* a CQ polled empty looks for the daemon again from then */
	pthread_mutex_t qp_lock;   /* the QP list, and the flush when the daemon is gone */
	struct mrv_qp *qps;
	pthread_mutex_t pd_lock;   /* PD ids, and the SRQ list */
	struct mrv_srq *srqs;	   /* for the async events they raise */
	int async_peer;		   /* the other end of async_fd: the daemon's per SRQ, and
				    * ours to report the daemon gone */
	uint64_t *pd_ids;	   /* bit i: PD id i is taken (made at the first ibv_alloc_pd) */
	uint32_t next_pd_id;	   /* where the next-fit search for a free id starts */
	uint32_t n_pds;		   /* PDs allocated now: the device's max_pd is enforced */
};

struct mrv_pd {
	struct ibv_pd ibpd;
	uint32_t id;	/* 1..MRC_CTL_MAX_PD within the context: what the daemon binds keys to */
	uint32_t users;	/* its regions and QPs: a PD in use is not deallocated (EBUSY) */
};

/* A region or QP begins or ends using its PD. */
static inline void mrv_pd_use(struct ibv_pd *pd, int delta)
{
	__atomic_add_fetch(&((struct mrv_pd *)pd)->users, (uint32_t)delta, __ATOMIC_RELAXED);
}

static inline uint32_t mrv_pd_id(const struct ibv_pd *pd)
{
	return ((const struct mrv_pd *)pd)->id;
}

struct mrv_mr {
	struct ibv_mr ibmr;
	unsigned n_segments;
	struct mrv_segment **segments; /* references into the page registry */
	unsigned access;
	uint64_t iova;		       /* what peers name it by (ibv_reg_mr_iova) */
};

struct mrv_cq {
	struct ibv_cq_ex ibcq; /* every CQ is an extended one; ibv_cq is its prefix */
	struct mrv_context *ctx;
	uint32_t handle;
	void *mem;
	size_t mem_len;
	struct mrc_ring ring;
	uint32_t events_seen;	 /* completion events taken by ibv_get_cq_event */
	uint32_t armed_at;	 /* the producer index when it was last armed */
	pthread_spinlock_t lock;
	struct mrc_cq_entry cur; /* ibv_start_poll's current entry */
	uint32_t empty_polls;	 /* under lock, since creation: every so many, a look at the
				  * daemon (mrv_cq_empty_look) */
	uint64_t wc_flags;	 /* the ibv_create_cq_ex fields the application asked for */
	struct mrv_cq *next_on_channel;
};

struct mrv_channel {
	struct ibv_comp_channel ibch; /* fd: our end of the socket pair */
	int daemon_end;		      /* the end each CQ hands to the daemon */
	pthread_mutex_t lock;
	struct mrv_cq *cqs;	      /* the CQs bound to this channel */
	uint32_t orphaned;	      /* events of destroyed CQs still in the socket */
	struct mrc_spin spin;	      /* METAROCE_BUSY_POLL: ibv_get_cq_event's spin, under lock */
};

struct mrv_srq {
	struct ibv_srq ibsrq;
	struct mrv_context *ctx;
	uint32_t handle;
	void *mem;
	size_t mem_len;
	struct mrc_ring ring;
	pthread_spinlock_t lock;
	uint32_t max_sge;
	uint32_t limit;		/* armed limit as the library last set it; 0 after the event */
	struct mrv_srq *next;	/* on the context's list */
};

struct mrv_qp {
	struct ibv_qp_ex ibqpx; /* every QP is an extended one; ibv_qp is its prefix */
	struct mrv_context *ctx;
	struct mrv_cq *send_cq, *recv_cq;
	struct mrv_srq *srq;	 /* its receives come from here; post_recv is refused */
	void *sq_mem, *rq_mem;
	size_t sq_len, rq_len;
	struct mrc_ring sq, rq;
	pthread_spinlock_t lock;
	struct ibv_qp_cap cap;
	struct ibv_qp_attr attr; /* what modify_qp settled, for query_qp */
	int attr_mask_set;
	bool sq_sig_all;
	bool extended;		 /* created with send_ops_flags: ibv_qp_to_qp_ex answers */
	/* inline data is copied here; inline slot i belongs to SQ ring slot i */
	uint8_t *inline_buf;
	struct ibv_mr *inline_mr;
	/* ibv_wr_* builds entries here until ibv_wr_complete */
	struct mrc_sq_entry *staged;
	uint32_t n_staged;
	int wr_error;		 /* first error of the current ibv_wr_start batch */
	uint8_t paths_per_plane; /* metaroce_qp_set_paths; 0: the daemon's choice */
	uint16_t plane_mask;	 /* 0: every plane */
	uint32_t doorbell_bit;	 /* its bit in the context's doorbell page */
	struct mrv_qp *next_in_ctx;
};

/* --- the daemon gone (fatal.c) --- */
void mrv_qp_track(struct mrv_qp *qp);
void mrv_qp_untrack(struct mrv_qp *qp);
/* The context dead for good, IBV_EVENT_DEVICE_FATAL raised, once. */
void mrv_mark_dead(struct mrv_context *ctx);
/* What poll() reports on the control connection when the daemon is gone. */
#define MRV_HANG_UP (POLLHUP | POLLRDHUP | POLLERR)
/* Every outstanding work request of a dead context completed with WR_FLUSH_ERR. */
void mrv_flush_dead(struct mrv_context *ctx);
#define MRV_LIVENESS_POLLS 1024
/* A poll of cq found nothing; under its lock, a plain count (no atomic on the polling path):
 * whether to look for the daemon (mrv_cq_polled_empty) once the lock is released. */
static inline bool mrv_cq_empty_look(struct mrv_cq *cq)
{
	return __atomic_load_n(&cq->ctx->dead, __ATOMIC_ACQUIRE) ||
	       ++cq->empty_polls % MRV_LIVENESS_POLLS == 0;
}
/* The look, not holding the CQ's lock: true when the daemon is gone and whatever was
 * outstanding has just been flushed into the CQs (poll again). */
bool mrv_cq_polled_empty(struct mrv_cq *cq);

/* --- UD QPs and address handles (ud.c) --- */
/* A UD send entry's destination, from an address handle; EINVAL when it is none. */
int mrv_ud_address(struct mrc_sq_entry *e, struct ibv_ah *ah, uint32_t remote_qpn,
		   uint32_t remote_qkey);
void mrv_wr_set_ud_addr(struct ibv_qp_ex *qpx, struct ibv_ah *ah, uint32_t remote_qpn,
			uint32_t remote_qkey);
/* A UD QP's ibv_modify_qp, checked and told to the daemon; the caller enters the state. */
int mrv_ud_modify(struct mrv_qp *qp, enum ibv_qp_state from, enum ibv_qp_state to,
		  const struct ibv_qp_attr *a, int mask);

/* --- memory windows (window.c) --- */
/* alloc_mw, dealloc_mw, bind_mw into a context's ops */
void mrv_window_ops(struct ibv_context_ops *ops);

/* The port's active MTU: the largest IB MTU that fits the payload the daemon's planes carry. */
static inline enum ibv_mtu mrv_active_mtu(const struct mrv_context *ctx)
{
	uint16_t max_payload = ctx->status.max_payload;

	return max_payload >= 4096   ? IBV_MTU_4096
	       : max_payload >= 2048 ? IBV_MTU_2048
	       : max_payload >= 1024 ? IBV_MTU_1024
	       : max_payload >= 512  ? IBV_MTU_512
				     : IBV_MTU_256;
}

static inline struct mrv_context *to_ctx(struct ibv_context *c)
{
	return (struct mrv_context *)((uint8_t *)c - __builtin_offsetof(struct mrv_context,
									   vctx.context));
}

/* --- the control connection (daemon_link.c) --- */
/*
 * A control connection: with a doorbell eventfd it says HELLO and maps the doorbell page the
 * daemon answers with (*doorbells; pass NULL without one), else it only asks for the status.
 */
int mrv_link_open(struct mrc_ctl_status *status, int doorbell_fd,
		  struct mrc_doorbell_page **doorbells, int *fd_out);
/*
 * One request and its reply on the context's connection. fds go with the request; up to
 * *n_rfds come back. Returns 0 or a positive errno (the daemon's, or of the socket).
 */
int mrv_request(struct mrv_context *ctx, uint16_t type, const void *payload, uint32_t len,
		const int *fds, unsigned n_fds, void *reply, uint32_t reply_cap,
		uint32_t *reply_len, int *rfds, unsigned *n_rfds);
/* After producing into one of the QP's rings: wakes the daemon if it asked to be woken. */
void mrv_ring_doorbell(struct mrv_qp *qp, const struct mrc_ring *ring);

/*
 * Exported symbols rdma-core declares only in its private headers (driver.h): perftest and
 * rdma-core's own tools import them. The GID type is rdma-core's enum ibv_gid_type_sysfs.
 */
#define MRV_GID_TYPE_SYSFS_ROCE_V2 1
int ibv_query_gid_type(struct ibv_context *context, uint8_t port_num, unsigned int index,
		       int *type);
int ibv_dontfork_range(void *base, size_t size);
int ibv_dofork_range(void *base, size_t size);

/* --- pieces other files need --- */
int mrv_map_ring(int fd, uint16_t kind, uint32_t entries, void **mem, size_t *len,
		 struct mrc_ring *ring);
/* Receive requests into a QP's or an SRQ's ring, the caller holding its lock; *posted when
 * any went in, *bad at the first refused (EINVAL: too many elements; ENOMEM: ring full). */
int mrv_produce_receives(struct mrc_ring *ring, unsigned max_sge, struct ibv_recv_wr *wr,
			 struct ibv_recv_wr **bad, bool *posted);
/* A window's bind as a send entry, from verbs' bind information; EINVAL or EPERM when it is
 * not one. */
int mrv_bind_entry(struct mrc_sq_entry *e, struct ibv_mw *mw, uint32_t rkey,
		   const struct ibv_mw_bind_info *info);
/* One send entry onto a QP's ring, as ibv_post_send would (EINVAL before RTS, ENOMEM full). */
int mrv_post_entry(struct mrv_qp *qp, const struct mrc_sq_entry *e);
int mrv_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad);
struct mrv_srq *mrv_srq_limit_reached(struct mrv_context *ctx);
int mrv_query_port(struct ibv_context *context, uint8_t port_num, struct ibv_port_attr *attr,
		   size_t attr_len);
int mrv_query_device_ex(struct ibv_context *context, const struct ibv_query_device_ex_input *in,
			struct ibv_device_attr_ex *attr, size_t attr_size);
struct ibv_cq_ex *mrv_create_cq_ex(struct ibv_context *context,
				   struct ibv_cq_init_attr_ex *attr);
struct ibv_qp *mrv_create_qp_ex(struct ibv_context *context, struct ibv_qp_init_attr_ex *attr);
int mrv_poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc);
int mrv_req_notify_cq(struct ibv_cq *cq, int solicited_only);
int mrv_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad);
int mrv_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad);
struct ibv_mr *mrv_reg_mr(struct ibv_pd *pd, void *addr, size_t length, uint64_t iova,
			  unsigned access);

#endif /* METAROCE_VERBS_INTERNAL_H */
