/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
#include "ring.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

uint32_t mrc_ring_entry_size(uint16_t kind)
{
	switch (kind) {
	case MRC_RING_SQ:
		return sizeof(struct mrc_sq_entry);
	case MRC_RING_RQ:
		return sizeof(struct mrc_rq_entry);
	case MRC_RING_CQ:
		return sizeof(struct mrc_cq_entry);
	default:
		return 0;
	}
}

static int power_of_two(uint32_t n)
{
	return n && !(n & (n - 1));
}

int mrc_ring_format(void *mem, size_t size, uint16_t kind, uint32_t entries, uint32_t qp_num)
{
	struct mrc_ring_hdr *h = mem;
	uint32_t es = mrc_ring_entry_size(kind);

	if (!es || !power_of_two(entries) || entries > (1u << 20) ||
	    size < MRC_RING_BYTES((size_t)entries, es))
		return -EINVAL;
	memset(mem, 0, MRC_RING_ENTRIES_OFF);
	h->magic = MRC_RING_MAGIC;
	h->version = MRC_RING_VERSION;
	h->kind = kind;
	h->entry_size = es;
	h->entries = entries;
	h->qp_num = qp_num;
	/* nobody reads a new work queue each turn: its producer rings until told otherwise */
	if (kind == MRC_RING_SQ || kind == MRC_RING_RQ)
		((struct mrc_ring_index *)((uint8_t *)mem + MRC_RING_CONSUMER_OFF))->aux =
			MRC_RING_AUX_NEED_WAKEUP;
	return 0;
}

int mrc_ring_attach(struct mrc_ring *r, void *mem, size_t size, uint16_t kind, int as_producer)
{
	struct mrc_ring_hdr h;

	if (size < MRC_RING_ENTRIES_OFF)
		return -EPROTO;
	memcpy(&h, mem, sizeof(h)); /* one copy; the peer may change the original at any time */
	if (h.magic != MRC_RING_MAGIC || h.version != MRC_RING_VERSION || h.kind != kind ||
	    h.entry_size != mrc_ring_entry_size(kind) || !power_of_two(h.entries) ||
	    h.entries > (1u << 20) || size < MRC_RING_BYTES((size_t)h.entries, h.entry_size))
		return -EPROTO;
	memset(r, 0, sizeof(*r));
	r->entry_base = (uint8_t *)mem + MRC_RING_ENTRIES_OFF;
	r->producer = (struct mrc_ring_index *)((uint8_t *)mem + MRC_RING_PRODUCER_OFF);
	r->consumer = (struct mrc_ring_index *)((uint8_t *)mem + MRC_RING_CONSUMER_OFF);
	r->entries = h.entries;
	r->entry_size = h.entry_size;
	r->kind = kind;
	r->mine = __atomic_load_n(as_producer ? &r->producer->value : &r->consumer->value,
				  __ATOMIC_ACQUIRE);
	r->released = r->mine;
	return 0;
}

int mrc_ring_produce(struct mrc_ring *r, const void *entry)
{
	uint32_t consumer = __atomic_load_n(&r->consumer->value, __ATOMIC_ACQUIRE);
	uint32_t used = r->mine - consumer;

	if (used > r->entries)
		return -EPROTO;
	if (used == r->entries)
		return -EAGAIN;
	memcpy(r->entry_base + (size_t)(r->mine & (r->entries - 1)) * r->entry_size, entry,
	       r->entry_size);
	r->mine++;
	__atomic_store_n(&r->producer->value, r->mine, __ATOMIC_RELEASE);
	return 0;
}

int mrc_ring_consume(struct mrc_ring *r, void *out)
{
	uint32_t producer = __atomic_load_n(&r->producer->value, __ATOMIC_ACQUIRE);
	uint32_t avail = producer - r->mine;

	if (avail > r->entries)
		return -EPROTO;
	if (avail == 0)
		return 0;
	memcpy(out, r->entry_base + (size_t)(r->mine & (r->entries - 1)) * r->entry_size,
	       r->entry_size);
	r->mine++;
	__atomic_store_n(&r->consumer->value, r->mine, __ATOMIC_RELEASE);
	return 1;
}

int mrc_ring_take(struct mrc_ring *r, void *out)
{
	uint32_t producer = __atomic_load_n(&r->producer->value, __ATOMIC_ACQUIRE);

	/* the producer can be at most a ring ahead of what was given back */
	if (producer - r->released > r->entries || producer - r->mine > r->entries)
		return -EPROTO;
	if (producer == r->mine)
		return 0;
	memcpy(out, r->entry_base + (size_t)(r->mine & (r->entries - 1)) * r->entry_size,
	       r->entry_size);
	r->mine++;
	return 1;
}

int mrc_ring_peek(const struct mrc_ring *r, uint32_t ahead, void *out)
{
	uint32_t producer = __atomic_load_n(&r->producer->value, __ATOMIC_ACQUIRE);
	uint32_t avail = producer - r->mine;

	if (avail > r->entries)
		return -EPROTO;
	if (ahead >= avail)
		return 0;
	memcpy(out, r->entry_base + (size_t)((r->mine + ahead) & (r->entries - 1)) * r->entry_size,
	       r->entry_size);
	return 1;
}

void mrc_ring_release(struct mrc_ring *r, uint32_t upto)
{
	r->released = upto;
	__atomic_store_n(&r->consumer->value, upto, __ATOMIC_RELEASE);
}

void mrc_ring_want_doorbell(struct mrc_ring *r, int want)
{
	uint32_t aux = __atomic_load_n(&r->consumer->aux, __ATOMIC_RELAXED); /* ours alone */

	aux = want ? aux | MRC_RING_AUX_NEED_WAKEUP : aux & ~MRC_RING_AUX_NEED_WAKEUP;
	__atomic_store_n(&r->consumer->aux, aux, __ATOMIC_RELEASE);
	if (want)
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
}

int mrc_ring_doorbell_wanted(const struct mrc_ring *r)
{
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	return !!(__atomic_load_n(&r->consumer->aux, __ATOMIC_ACQUIRE) & MRC_RING_AUX_NEED_WAKEUP);
}

int mrc_shm_create(const char *name, size_t size)
{
	int fd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);

	if (fd < 0)
		return -errno;
	if (ftruncate(fd, (off_t)size) ||
	    fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL)) {
		int err = -errno;

		close(fd);
		return err;
	}
	return fd;
}

int mrc_shm_check(int fd, size_t min_size)
{
	struct stat st;
	int seals = fcntl(fd, F_GET_SEALS);

	if (seals < 0)
		return -errno;
	if (!(seals & F_SEAL_SHRINK))
		return -EPERM;
	if (fstat(fd, &st))
		return -errno;
	if ((size_t)st.st_size < min_size)
		return -EINVAL;
	return 0;
}
