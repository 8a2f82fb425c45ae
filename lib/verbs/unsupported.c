/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* These fail: metaroce is RC-only on its own transport, no kernel device, no UD/multicast yet. */
/*
 * Each is exported so that a program linked against libibverbs still loads, and fails the way
 * rdma-core fails when a provider lacks the verb: NULL with errno for objects; for the rest
 * what rdma-core's own code returns there, the errno value for most. errno is set in every
 * case, so a caller that prints strerror(errno) after a non-zero return prints the real reason.
 * No argument is read or written: they may be NULL, and none of them is ours.
 *
 * None of these names has ever been a macro in rdma-core's verbs.h (ibv_get_device_list,
 * ibv_query_port, ibv_reg_mr and ibv_reg_mr_iova are), so they are defined as declared there.
 */
#include <errno.h>
#include <stddef.h>

#include <infiniband/verbs.h>

/* every argument goes unused on purpose */
#pragma GCC diagnostic ignored "-Wunused-parameter"

/*
 * rdma-core declares these two in its internal infiniband/driver.h, which is not installed.
 * librdmacm.so.1 calls both to find the rdma_cm ABI version, and falls back to the newest ABI
 * when the read fails, which is what it gets here.
 */
const char *ibv_get_sysfs_path(void);
int ibv_read_sysfs_file(const char *dir, const char *file, char *buf, size_t size);

static void *fail_null(void)
{
	errno = EOPNOTSUPP;
	return NULL;
}

static int fail_errno(void)
{
	errno = EOPNOTSUPP;
	return EOPNOTSUPP;
}

/* sysfs: there is no /sys/class/infiniband device behind a metaroce context */

const char *ibv_get_sysfs_path(void)
{
	errno = ENOSYS;
	return NULL;
}

int ibv_read_sysfs_file(const char *dir, const char *file, char *buf, size_t size)
{
	errno = ENOSYS;
	return -1;
}

/*
 * rdma-core answers a negative errno here (-EINVAL, -EHOSTUNREACH). The MAC of a RoCE peer
 * comes from the kernel's neighbour table for a GID of a real RoCE port, which metaroce has not.
 */
int ibv_resolve_eth_l2_from_gid(struct ibv_context *context, struct ibv_ah_attr *attr,
				uint8_t eth_mac[ETHERNET_LL_SIZE], uint16_t *vid)
{
	errno = EOPNOTSUPP;
	return -EOPNOTSUPP;
}

/* multicast: a UD-only service */

int ibv_attach_mcast(struct ibv_qp *qp, const union ibv_gid *gid, uint16_t lid)
{
	return fail_errno();
}

int ibv_detach_mcast(struct ibv_qp *qp, const union ibv_gid *gid, uint16_t lid)
{
	return fail_errno();
}

/*
 * import/unimport: sharing a context and its objects between processes goes through the
 * kernel's uverbs command fd, which a metaroce context does not have. Nothing can have been
 * imported, so unimport has nothing to release and leaves its argument alone.
 */

struct ibv_context *ibv_import_device(int cmd_fd)
{
	return fail_null();
}

struct ibv_pd *ibv_import_pd(struct ibv_context *context, uint32_t pd_handle)
{
	return fail_null();
}

void ibv_unimport_pd(struct ibv_pd *pd)
{
}

struct ibv_mr *ibv_import_mr(struct ibv_pd *pd, uint32_t mr_handle)
{
	return fail_null();
}

void ibv_unimport_mr(struct ibv_mr *mr)
{
}

struct ibv_dm *ibv_import_dm(struct ibv_context *context, uint32_t dm_handle)
{
	return fail_null();
}

void ibv_unimport_dm(struct ibv_dm *dm)
{
}

/*
 * dma-buf memory regions: the daemon places data through a CPU mapping of registered memory,
 * and the device memory behind a dma-buf offers none it could use.
 */

struct ibv_mr *ibv_reg_dmabuf_mr(struct ibv_pd *pd, uint64_t offset, size_t length, uint64_t iova,
				 int fd, int access)
{
	return fail_null();
}

/*
 * Enhanced Connection Establishment: vendor options negotiated between two NICs. librdmacm
 * treats EOPNOTSUPP from these as "no ECE" and goes on, so that exact value matters.
 */

int ibv_set_ece(struct ibv_qp *qp, struct ibv_ece *ece)
{
	return fail_errno();
}

int ibv_query_ece(struct ibv_qp *qp, struct ibv_ece *ece)
{
	return fail_errno();
}
