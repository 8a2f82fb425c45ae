/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The device as verbs programs see it: one RoCEv2-like device per reachable metaroced, with
 * an Ethernet link layer, one port, and one IPv4-mapped (or IPv6) GID per plane address in
 * plane order. Attributes are what the daemon and this library truly provide.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include "internal.h"

/*
 * No real vendor: 0xffffff is what software providers (rxe) report, so that programs keyed
 * to a vendor's quirks leave this device alone; the part id says which software.
 */
#define MRV_VENDOR_ID 0xffffffu
#define MRV_VENDOR_PART_ID 0x4d52u /* "MR" */

static struct mrv_device the_device;
static pthread_mutex_t device_lock = PTHREAD_MUTEX_INITIALIZER;

static void warn_once(const char *path, int err)
{
	static bool warned;

	/* a program that finds no device says only that; this line says why */
	if (!warned && !getenv("METAROCE_QUIET"))
		fprintf(stderr, "libmetaroce: no device: cannot reach metaroced at %s: %s\n", path,
			strerror(err));
	warned = true;
}

struct ibv_device **ibv_get_device_list(int *num_devices)
{
	struct ibv_device **list = calloc(2, sizeof(*list));
	struct mrc_ctl_status status;
	int fd, err;

	if (num_devices)
		*num_devices = 0;
	if (!list) {
		errno = ENOMEM;
		return NULL;
	}
	err = mrv_link_open(&status, -1, NULL, &fd);
	if (err) {
		warn_once(mrv_socket_path(), err);
		return list; /* an empty list, as libibverbs gives without devices */
	}
	close(fd);
	pthread_mutex_lock(&device_lock);
	the_device.status = status;
	the_device.ibdev.node_type = IBV_NODE_CA;
	the_device.ibdev.transport_type = IBV_TRANSPORT_IB; /* what RoCE devices report */
	snprintf(the_device.ibdev.name, sizeof(the_device.ibdev.name), MRV_DEVICE_NAME);
	snprintf(the_device.ibdev.dev_name, sizeof(the_device.ibdev.dev_name), "uverbs-metaroce");
	snprintf(the_device.ibdev.dev_path, sizeof(the_device.ibdev.dev_path), "%s",
		 mrv_socket_path());
	snprintf(the_device.ibdev.ibdev_path, sizeof(the_device.ibdev.ibdev_path),
		 "/sys/class/infiniband/" MRV_DEVICE_NAME);
	pthread_mutex_unlock(&device_lock);
	list[0] = &the_device.ibdev;
	if (num_devices)
		*num_devices = 1;
	return list;
}

void ibv_free_device_list(struct ibv_device **list)
{
	free(list);
}

const char *ibv_get_device_name(struct ibv_device *device)
{
	return device->name;
}

/* The daemon's node id: unique per daemon run, as a GUID is per adapter. */
__be64 ibv_get_device_guid(struct ibv_device *device)
{
	struct mrv_device *dev = (struct mrv_device *)device;

	return htobe64(dev->status.node_id);
}

int ibv_get_device_index(struct ibv_device *device)
{
	(void)device;
	return 0;
}

static int mrv_query_device(struct ibv_context *context, struct ibv_device_attr *a)
{
	struct mrv_context *ctx = to_ctx(context);

	memset(a, 0, sizeof(*a));
	snprintf(a->fw_ver, sizeof(a->fw_ver), "metaroce %u", MRC_CTL_CLIENT_ABI);
	a->vendor_id = MRV_VENDOR_ID;
	a->vendor_part_id = MRV_VENDOR_PART_ID;
	a->hw_ver = MRC_CTL_CLIENT_ABI;
	a->node_guid = htobe64(ctx->status.node_id);
	a->sys_image_guid = a->node_guid;
	a->max_mr_size = 1ull << 40;
	a->page_size_cap = (uint64_t)sysconf(_SC_PAGESIZE);
	a->max_qp = MRC_CTL_CLIENT_MAX_QPS;
	a->max_qp_wr = MRC_CTL_MAX_RING_ENTRIES;
	/* the one asynchronous event raised is DEVICE_FATAL: no PORT_ACTIVE_EVENT */
	a->device_cap_flags = IBV_DEVICE_RC_RNR_NAK_GEN | IBV_DEVICE_MEM_WINDOW |
			      IBV_DEVICE_MEM_WINDOW_TYPE_2B; /* SPEC 4.9 */
	a->max_sge = MRC_RING_MAX_SGE;
	a->max_sge_rd = MRC_RING_MAX_SGE;
	a->max_cq = MRC_CTL_CLIENT_MAX_CQS;
	a->max_cqe = MRC_CTL_MAX_RING_ENTRIES;
	a->max_mr = MRC_CTL_CLIENT_MAX_MRS;
	a->max_mw = MRC_CTL_CLIENT_MAX_MRS; /* one key table: regions and windows together */
	a->max_pd = MRC_CTL_MAX_PD;
	a->max_qp_rd_atom = MRV_MAX_RD_ATOM;
	a->max_qp_init_rd_atom = MRV_MAX_RD_ATOM;
	a->max_res_rd_atom = MRC_CTL_CLIENT_MAX_QPS * MRV_MAX_RD_ATOM;
	a->atomic_cap = IBV_ATOMIC_HCA; /* SPEC R-324 */
	a->max_pkeys = 1;
	a->max_srq = MRC_CTL_CLIENT_MAX_SRQS;
	a->max_srq_wr = MRC_CTL_MAX_RING_ENTRIES;
	a->max_srq_sge = MRC_RING_MAX_SGE;
	/* an address handle is the library's alone (the destination's GID): no daemon table */
	a->max_ah = INT32_MAX;
	a->local_ca_ack_delay = 0;
	a->phys_port_cnt = 1;
	return 0;
}

int ibv_query_device(struct ibv_context *context, struct ibv_device_attr *device_attr)
{
	return mrv_query_device(context, device_attr);
}

int mrv_query_device_ex(struct ibv_context *context, const struct ibv_query_device_ex_input *in,
			struct ibv_device_attr_ex *attr, size_t attr_size)
{
	struct ibv_device_attr_ex a;

	if (in && in->comp_mask)
		return EINVAL;
	if (attr_size < sizeof(a.orig_attr))
		return EINVAL;
	memset(&a, 0, sizeof(a));
	mrv_query_device(context, &a.orig_attr);
	a.phys_port_cnt_ex = a.orig_attr.phys_port_cnt;
	/* the rest stays 0: no ODP, timestamps, TSO, RSS, WQs, pacing, tag matching, CQ
	 * moderation, device memory or PCI atomics */
	memcpy(attr, &a, attr_size < sizeof(a) ? attr_size : sizeof(a));
	if (attr_size > sizeof(a))
		memset((uint8_t *)attr + sizeof(a), 0, attr_size - sizeof(a));
	return 0;
}

int mrv_query_port(struct ibv_context *context, uint8_t port_num, struct ibv_port_attr *out,
		   size_t attr_len)
{
	struct mrv_context *ctx = to_ctx(context);
	struct ibv_port_attr a;

	if (port_num != 1)
		return EINVAL;
	memset(&a, 0, sizeof(a));
	a.state = __atomic_load_n(&ctx->dead, __ATOMIC_ACQUIRE) ? IBV_PORT_DOWN : IBV_PORT_ACTIVE;
	a.max_mtu = IBV_MTU_4096;
	a.active_mtu = mrv_active_mtu(ctx);
	a.gid_tbl_len = ctx->status.n_planes;
	a.port_cap_flags = 0;
	a.max_msg_sz = 1u << 31;
	a.pkey_tbl_len = 1;
	a.lid = 0;
	a.sm_lid = 0;
	a.lmc = 0;
	a.max_vl_num = 1;
	a.active_width = 2;   /* 4X */
	a.active_speed = 32;  /* EDR: 4X EDR reads as 100 Gb/s, a nominal figure */
	a.phys_state = a.state == IBV_PORT_DOWN ? 3 : 5; /* disabled / link up */
	a.link_layer = IBV_LINK_LAYER_ETHERNET;
	memcpy(out, &a, attr_len < sizeof(a) ? attr_len : sizeof(a));
	return 0;
}

/* The compat entry point: the header's inline wrapper calls verbs_context's query_port. */
int(ibv_query_port)(struct ibv_context *context, uint8_t port_num,
		    struct _compat_ibv_port_attr *port_attr)
{
	/* the compat struct is ibv_port_attr as it was before port_cap_flags2 was added */
	int err = mrv_query_port(context, port_num, (struct ibv_port_attr *)port_attr,
				 __builtin_offsetof(struct ibv_port_attr, port_cap_flags2));

	if (err) {
		errno = err;
		return -1;
	}
	return 0;
}

static int gid_of(struct mrv_context *ctx, uint8_t port, int index, union ibv_gid *gid)
{
	if (port != 1 || index < 0 || index >= ctx->status.n_planes)
		return EINVAL;
	memcpy(gid->raw, ctx->status.planes[index].addr, 16);
	return 0;
}

int ibv_query_gid(struct ibv_context *context, uint8_t port_num, int index, union ibv_gid *gid)
{
	int err = gid_of(to_ctx(context), port_num, index, gid);

	if (err) {
		errno = err;
		return -1;
	}
	return 0;
}

int ibv_query_gid_type(struct ibv_context *context, uint8_t port_num, unsigned int index,
		       int *type)
{
	union ibv_gid gid;

	if (gid_of(to_ctx(context), port_num, (int)index, &gid)) {
		errno = EINVAL;
		return -1;
	}
	*type = MRV_GID_TYPE_SYSFS_ROCE_V2;
	return 0;
}

static void gid_entry(struct mrv_context *ctx, unsigned index, struct ibv_gid_entry *e)
{
	memset(e, 0, sizeof(*e));
	memcpy(e->gid.raw, ctx->status.planes[index].addr, 16);
	e->gid_index = index;
	e->port_num = 1;
	e->gid_type = IBV_GID_TYPE_ROCE_V2;
	e->ndev_ifindex = 0; /* the daemon's namespace, not necessarily ours */
}

int _ibv_query_gid_ex(struct ibv_context *context, uint32_t port_num, uint32_t gid_index,
		      struct ibv_gid_entry *entry, uint32_t flags, size_t entry_size)
{
	struct mrv_context *ctx = to_ctx(context);
	struct ibv_gid_entry e;

	if (flags || entry_size < sizeof(e) || port_num != 1)
		return EINVAL;
	if (gid_index >= ctx->status.n_planes)
		return ENODATA;
	gid_entry(ctx, gid_index, &e);
	memcpy(entry, &e, sizeof(e));
	return 0;
}

ssize_t _ibv_query_gid_table(struct ibv_context *context, struct ibv_gid_entry *entries,
			     size_t max_entries, uint32_t flags, size_t entry_size)
{
	struct mrv_context *ctx = to_ctx(context);
	size_t n = ctx->status.n_planes;

	if (flags || entry_size < sizeof(struct ibv_gid_entry))
		return -EINVAL;
	if (max_entries < n)
		return -EINVAL;
	for (size_t i = 0; i < n; i++)
		gid_entry(ctx, (unsigned)i, (struct ibv_gid_entry *)((uint8_t *)entries +
								     i * entry_size));
	return (ssize_t)n;
}

int ibv_query_pkey(struct ibv_context *context, uint8_t port_num, int index, __be16 *pkey)
{
	(void)context;
	if (port_num != 1 || index != 0) {
		errno = EINVAL;
		return -1;
	}
	*pkey = htobe16(0xffff); /* the default partition: RoCE has no other */
	return 0;
}

int ibv_get_pkey_index(struct ibv_context *context, uint8_t port_num, __be16 pkey)
{
	(void)context;
	if (port_num == 1 && (be16toh(pkey) & 0x7fff) == 0x7fff)
		return 0;
	errno = ENOENT;
	return -1;
}

/* --- contexts ----------------------------------------------------------------------------- */

struct ibv_context *ibv_open_device(struct ibv_device *device)
{
	struct mrv_context *ctx;
	int err;

	if (device != &the_device.ibdev) {
		errno = ENODEV;
		return NULL;
	}
	ctx = calloc(1, sizeof(*ctx));
	if (!ctx) {
		errno = ENOMEM;
		return NULL;
	}
	ctx->ctl_fd = -1;
	ctx->doorbell_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	{
		/* async events: a byte per event on a datagram socket, from the daemon (each
		 * SRQ's limit) or from this library (the daemon gone) */
		int sv[2] = { -1, -1 };

		if (socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, sv) == 0) {
			ctx->vctx.context.async_fd = sv[0];
			ctx->async_peer = sv[1];
		} else {
			ctx->vctx.context.async_fd = ctx->async_peer = -1;
		}
	}
	if (ctx->doorbell_fd < 0 || ctx->vctx.context.async_fd < 0) {
		err = errno;
		goto fail;
	}
	err = mrv_link_open(&ctx->status, ctx->doorbell_fd, &ctx->doorbells, &ctx->ctl_fd);
	if (err)
		goto fail;
	pthread_mutex_init(&ctx->ctl_lock, NULL);
	pthread_mutex_init(&ctx->pd_lock, NULL);
	pthread_mutex_init(&ctx->qp_lock, NULL);
	ctx->vctx.sz = sizeof(ctx->vctx);
	ctx->vctx.query_port = mrv_query_port;
	ctx->vctx.query_device_ex = mrv_query_device_ex;
	ctx->vctx.create_cq_ex = mrv_create_cq_ex;
	ctx->vctx.create_qp_ex = mrv_create_qp_ex;
	ctx->vctx.context.device = device;
	ctx->vctx.context.cmd_fd = ctx->ctl_fd;
	ctx->vctx.context.num_comp_vectors = 1;
	ctx->vctx.context.abi_compat = __VERBS_ABI_IS_EXTENDED;
	ctx->vctx.context.ops.poll_cq = mrv_poll_cq;
	ctx->vctx.context.ops.req_notify_cq = mrv_req_notify_cq;
	ctx->vctx.context.ops.post_send = mrv_post_send;
	ctx->vctx.context.ops.post_recv = mrv_post_recv;
	ctx->vctx.context.ops.post_srq_recv = mrv_post_srq_recv;
	mrv_window_ops(&ctx->vctx.context.ops);
	pthread_mutex_init(&ctx->vctx.context.mutex, NULL);
	return &ctx->vctx.context;

fail:
	if (ctx->doorbell_fd >= 0)
		close(ctx->doorbell_fd);
	if (ctx->vctx.context.async_fd >= 0) {
		close(ctx->vctx.context.async_fd);
		close(ctx->async_peer);
	}
	free(ctx);
	errno = err;
	return NULL;
}

/* Closing the connection is what frees everything in the daemon; the rest is ours. */
int ibv_close_device(struct ibv_context *context)
{
	struct mrv_context *ctx = to_ctx(context);

	close(ctx->ctl_fd);
	close(ctx->doorbell_fd);
	munmap(ctx->doorbells, sizeof(*ctx->doorbells));
	close(context->async_fd);
	close(ctx->async_peer);
	pthread_mutex_destroy(&ctx->ctl_lock);
	pthread_mutex_destroy(&ctx->pd_lock);
	pthread_mutex_destroy(&ctx->qp_lock);
	free(ctx->pd_ids);
	free(ctx);
	return 0;
}

/* A byte per event: an SRQ's limit reached (its flag says which), or the daemon gone. */
int ibv_get_async_event(struct ibv_context *context, struct ibv_async_event *event)
{
	struct mrv_context *ctx = to_ctx(context);
	struct mrv_srq *s;
	char b;

	if (recv(context->async_fd, &b, 1, 0) != 1)
		return -1;
	memset(event, 0, sizeof(*event));
	s = mrv_srq_limit_reached(ctx);
	if (s) {
		event->element.srq = &s->ibsrq;
		event->event_type = IBV_EVENT_SRQ_LIMIT_REACHED;
	} else {
		event->event_type = IBV_EVENT_DEVICE_FATAL;
	}
	return 0;
}

void ibv_ack_async_event(struct ibv_async_event *event)
{
	struct ibv_srq *srq = event->event_type == IBV_EVENT_SRQ_LIMIT_REACHED
				      ? event->element.srq
				      : NULL;

	if (srq) {
		pthread_mutex_lock(&srq->mutex);
		srq->events_completed++;
		pthread_cond_signal(&srq->cond);
		pthread_mutex_unlock(&srq->mutex);
	}
}

/* --- protection domains ------------------------------------------------------------------ */

/*
 * A PD is the library's: the daemon sees its id on each region and QP and lets a QP reach
 * only the regions of its own PD. Ids are unique among a context's live PDs.
 */
struct ibv_pd *ibv_alloc_pd(struct ibv_context *context)
{
	struct mrv_context *ctx = to_ctx(context);
	struct mrv_pd *pd = calloc(1, sizeof(*pd));
	uint32_t id = 0;

	if (!pd) {
		errno = ENOMEM;
		return NULL;
	}
	pthread_mutex_lock(&ctx->pd_lock);
	if (!ctx->pd_ids)
		ctx->pd_ids = calloc((MRC_CTL_MAX_PD + 64) / 64, sizeof(uint64_t));
	if (ctx->pd_ids && ctx->n_pds < MRC_CTL_MAX_PD) {
		for (uint32_t k = 0; k < MRC_CTL_MAX_PD && !id; k++) {
			uint32_t i = 1 + (ctx->next_pd_id + k) % MRC_CTL_MAX_PD;

			if (!(ctx->pd_ids[i / 64] >> (i % 64) & 1))
				id = i;
		}
	}
	if (id) {
		ctx->pd_ids[id / 64] |= 1ull << (id % 64);
		ctx->next_pd_id = id;
		ctx->n_pds++;
	}
	pthread_mutex_unlock(&ctx->pd_lock);
	if (!id) {
		free(pd);
		errno = ENOMEM; /* max_pd reached, as the kernel answers */
		return NULL;
	}
	pd->id = id;
	pd->ibpd.context = context;
	pd->ibpd.handle = id;
	return &pd->ibpd;
}

int ibv_dealloc_pd(struct ibv_pd *ibpd)
{
	struct mrv_pd *pd = (struct mrv_pd *)ibpd;
	struct mrv_context *ctx = to_ctx(ibpd->context);

	if (__atomic_load_n(&pd->users, __ATOMIC_RELAXED))
		return EBUSY; /* regions or QPs still in it */
	pthread_mutex_lock(&ctx->pd_lock);
	ctx->pd_ids[pd->id / 64] &= ~(1ull << (pd->id % 64));
	ctx->n_pds--;
	pthread_mutex_unlock(&ctx->pd_lock);
	free(pd);
	return 0;
}

/* --- fork ---------------------------------------------------------------------------------- */

/*
 * Registered pages are always MADV_DONTFORK (lib/shm/share.c): fork is as safe as
 * ibv_fork_init makes it on a real device, whether or not the program asked.
 */
int ibv_fork_init(void)
{
	return 0;
}

enum ibv_fork_status ibv_is_fork_initialized(void)
{
	return IBV_FORK_ENABLED;
}

int ibv_dontfork_range(void *base, size_t size)
{
	(void)base;
	(void)size;
	return 0;
}

int ibv_dofork_range(void *base, size_t size)
{
	(void)base;
	(void)size;
	return 0;
}
