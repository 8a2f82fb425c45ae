/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * librdmacm's ABI over metaroced (SPEC 17), in libmetaroce next to the verbs: each rdma_cm
 * id is the public struct embedded first in ours, and names the daemon's id by its handle.
 *
 *     rdma_create_event_channel   a SOCK_SEQPACKET pair; the daemon gets the other end
 *     rdma_create_id              MRC_CM_OP_CREATE_ID on the process's device context, which
 *                                 every id's `verbs` is (opened at the first need, kept)
 *     rdma_resolve_addr           the kernel's route picks the source (a plane's address),
 *                                 the daemon binds and tells ADDR_RESOLVED in order
 *     rdma_resolve_route          the daemon discovers the peer: ROUTE_RESOLVED
 *     rdma_connect / rdma_accept  the QP's transitions here, as librdmacm makes them with the
 *                                 kernel's CM; the daemons exchange REQ, REP, RTU
 *     rdma_get_cm_event           one record from the channel, turned into rdma_cm's event;
 *                                 a CONNECT_RESPONSE moves the QP to RTS and is ESTABLISHED;
 *                                 end-of-file (the daemon gone) is DEVICE_REMOVAL on each id
 */
#ifndef METAROCE_RDMACM_INTERNAL_H
#define METAROCE_RDMACM_INTERNAL_H

#include <pthread.h>
#include <rdma/rdma_cma.h>
#include <stdbool.h>

#include <metaroce/cm.h>

#include "verbs/internal.h"

#define MRCM_MAX_IDS 4096 /* the daemon's id slots: a handle's low 12 bits */

struct mrcm_channel {
	struct rdma_event_channel ch; /* first: fd, the application's end */
	uint32_t handle;	      /* the daemon's name for it */
	bool gone;		      /* its end read end-of-file: the daemon went */
	bool destroyed;		      /* the application destroyed it */
	unsigned readers;	      /* threads in rdma_get_cm_event on it (atomic) */
};

struct mrcm_id {
	struct rdma_cm_id id;	      /* first: what the application holds */
	uint32_t handle;	      /* the daemon's id, 0 once destroyed there */
	struct mrcm_channel *chan;
	bool sync;		      /* made without a channel: calls wait for their event */
	bool bound;
	bool removed;		      /* DEVICE_REMOVAL told */
	unsigned refs;		      /* events out and lookups in use, under the table's lock */
	bool destroyed;		      /* by the application: freed when refs drop to 0 */
	struct ibv_sa_path_rec path;
	uint32_t remote_qpn;
	/* what the application asked for at connect or accept, for its QP's transitions */
	uint8_t responder_resources, initiator_depth, retry_count, rnr_retry_count;
	uint8_t peer_retry;	      /* a request's: the requester's retry count */
	uint8_t tos;
	/* rdma_create_ep on a passive endpoint: the QP each request's id gets */
	bool has_qp_attr;
	struct ibv_qp_init_attr_ex qp_attr;
	struct ibv_pd *ep_pd;
	struct mrcm_id *listener;     /* a request's id: whose CONNECT_REQUEST it came by */
	bool own_cqs;		      /* rdma_create_qp made its CQs and channels */
};

struct mrcm_event {
	struct rdma_cm_event ev;      /* first */
	struct mrcm_id *held;	      /* the id it holds until it is acknowledged */
	uint8_t private_data[MRC_CM_PRIVATE_MAX];
};

/* --- id.c --------------------------------------------------------------------------------- */
/* The device context every id uses, opened at the first need; NULL with errno. */
struct ibv_context *mrcm_verbs(void);
/* One MRC_CTL_CM request; 0 or -1 with errno (the daemon's refusal, or ENODEV). */
int mrcm_request(struct mrc_ctl_cm *r, int fd, struct mrc_ctl_cm_reply *out);
/* The id the daemon calls `handle`, held (mrcm_release), or NULL (destroyed meanwhile). */
struct mrcm_id *mrcm_lookup(uint32_t handle);
void mrcm_release(struct mrcm_id *p);
/* The daemon's id destroyed there (a request this library could not take). */
int mrcm_forget(uint32_t handle);
/* A new id for a daemon id (a CONNECT_REQUEST's), entered in the table. */
struct mrcm_id *mrcm_adopt(uint32_t handle, struct mrcm_channel *chan, enum rdma_port_space ps,
			   void *context);
/* Every live id on the channel, for DEVICE_REMOVAL: the first not yet told, or NULL. */
struct mrcm_id *mrcm_next_unremoved(struct mrcm_channel *chan);
/* For a sync id: waits for the event that answers the call just made; 0 or -1 with errno
 * (the event's status, ECONNREFUSED for REJECTED). */
int mrcm_complete(struct mrcm_id *p);

/* --- addr.c: addresses --------------------------------------------------------------------- */
/* sockaddr <-> the 16-byte form the daemon speaks (IPv4-mapped) and a port in host order. */
int mrcm_addr_from(const struct sockaddr *sa, uint8_t addr[16], uint16_t *port);
void mrcm_addr_to(struct sockaddr_storage *ss, const uint8_t addr[16], uint16_t port,
		  bool v6_family);
bool mrcm_addr_any(const uint8_t addr[16]); /* 0.0.0.0 or :: */
/* The plane (GID index) whose address is addr; -1: none. */
int mrcm_gid_index(struct ibv_context *verbs, const uint8_t addr[16]);
/* The path record of a resolved route, as rdma_cm fills it for RoCE. */
void mrcm_fill_path(struct mrcm_id *p);

/* --- qp.c: the QP's transitions as the CM makes them ---------------------------------------- */
int mrcm_qp_rtr(struct mrcm_id *p);
int mrcm_qp_rts(struct mrcm_id *p);
/* A UD QP to RTS with the qkey of its port space. */
int mrcm_qp_ud_ready(struct mrcm_id *p);

/* --- event.c ------------------------------------------------------------------------------- */
/* A private channel for a sync id (rdma_create_ep, rdma_create_id without one). */
struct mrcm_channel *mrcm_channel_new(void);
void mrcm_channel_free(struct mrcm_channel *c);

#endif /* METAROCE_RDMACM_INTERNAL_H */
