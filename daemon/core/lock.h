/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The few places worker threads meet while they run (shard.h): a CQ that takes completions
 * from QPs of several workers, and the memory windows a send queue binds while other workers'
 * QPs look keys up. Each is held for a few stores, never across a system call; with one shard
 * nothing is taken. Plain atomics, so the core stays free of the threads library.
 */
#ifndef METAROCE_DAEMON_CORE_LOCK_H
#define METAROCE_DAEMON_CORE_LOCK_H

#include <stdbool.h>
#include <stdint.h>

static inline void mrcd_lock(uint32_t *lock, bool shared)
{
	if (!shared)
		return;
	while (__atomic_exchange_n(lock, 1, __ATOMIC_ACQUIRE))
		while (__atomic_load_n(lock, __ATOMIC_RELAXED))
			;
}

static inline void mrcd_unlock(uint32_t *lock, bool shared)
{
	if (shared)
		__atomic_store_n(lock, 0, __ATOMIC_RELEASE);
}

#endif /* METAROCE_DAEMON_CORE_LOCK_H */
