/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Rings over the shared memory of lib/include/metaroce/shm.h, and the memfds that hold them.
 * Used by both sides; neither trusts what the other wrote: each keeps its own index privately
 * and only publishes it, and every index read from the other side is checked before use.
 */
#ifndef METAROCE_SHM_RING_H
#define METAROCE_SHM_RING_H

#include <stddef.h>
#include <stdint.h>

#include <metaroce/shm.h>

struct mrc_ring {
	uint8_t *entry_base;
	struct mrc_ring_index *producer;
	struct mrc_ring_index *consumer;
	uint32_t entries;    /* copied once from the header, never re-read */
	uint32_t entry_size;
	uint16_t kind;
	uint32_t mine;	     /* our own index (producer's or consumer's), never read back */
	uint32_t released;   /* consumer: slots given back so far (mrc_ring_take/release) */
};

/* The entry size of a ring kind; 0 for an unknown kind. */
uint32_t mrc_ring_entry_size(uint16_t kind);

/* Writes a fresh ring into mem (the creating side). Returns 0 or -EINVAL. */
int mrc_ring_format(void *mem, size_t size, uint16_t kind, uint32_t entries, uint32_t qp_num);

/*
 * Checks a ring region's header against what this side expects and takes the geometry from
 * it once. `as_producer` selects which index this side owns. Returns 0, or -EPROTO for a
 * header that is not a ring of this kind and version or does not fit in size.
 */
int mrc_ring_attach(struct mrc_ring *r, void *mem, size_t size, uint16_t kind, int as_producer);

/* Appends one entry. Returns 0, -EAGAIN when full, -EPROTO when the peer's index is corrupt. */
int mrc_ring_produce(struct mrc_ring *r, const void *entry);

/* Takes the oldest entry into out. Returns 1, 0 when empty, -EPROTO when the peer's index is
 * corrupt (claims more entries than the ring holds). */
int mrc_ring_consume(struct mrc_ring *r, void *out);

/*
 * Takes the oldest entry without giving its slot back; the consumer releases slots itself
 * when it is done with what they describe (the daemon: when the engine has completed the
 * work, so a ring slot, and the inline bytes the library keeps beside it, stay the
 * application's until then). Returns 1, 0 when empty, -EPROTO for a corrupt producer index.
 */
int mrc_ring_take(struct mrc_ring *r, void *out);

/* A copy of the entry `ahead` places after the oldest not yet taken, which stays where it is.
 * Returns 1, 0 when there is none, -EPROTO for a corrupt producer index. */
int mrc_ring_peek(const struct mrc_ring *r, uint32_t ahead, void *out);

/* Gives back every slot before index upto (released <= upto <= taken). */
void mrc_ring_release(struct mrc_ring *r, uint32_t upto);

/* Consumer: entries published and not yet taken. */
static inline int mrc_ring_pending(const struct mrc_ring *r)
{
	return __atomic_load_n(&r->producer->value, __ATOMIC_ACQUIRE) != r->mine;
}

/*
 * Consumer (the daemon): whether the producer must ring the doorbell after producing
 * (MRC_RING_AUX_NEED_WAKEUP). Turning it on fences, so a check of mrc_ring_pending after it
 * sees any entry the producer published before it read the flag off.
 */
void mrc_ring_want_doorbell(struct mrc_ring *r, int want);

/* Producer (the library), after producing: whether the consumer asked for the doorbell. */
int mrc_ring_doorbell_wanted(const struct mrc_ring *r);

/*
 * A memfd of `size` bytes sealed against shrinking, growing and further sealing: what the
 * creating side hands over. Returns the fd or -errno.
 */
int mrc_shm_create(const char *name, size_t size);

/* The receiving side's check of a memfd it was handed: sealed against shrinking and at least
 * min_size bytes. Returns 0 or -EPERM (unsealed) / -EINVAL (too small) / -errno. */
int mrc_shm_check(int fd, size_t min_size);

#endif /* METAROCE_SHM_RING_H */
