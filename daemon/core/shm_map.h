/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Between the client rings' values (lib/include/metaroce/shm.h) and the engine's
 * (lib/proto/conn.h): the one place that knows both. Each direction checks what it reads.
 */
#ifndef METAROCE_DAEMON_CORE_SHM_MAP_H
#define METAROCE_DAEMON_CORE_SHM_MAP_H

#include <stdbool.h>
#include <stdint.h>

#include <metaroce/shm.h>

#include "proto/conn.h"

/* An SQ entry's opcode and flags as the engine's; false for values the ring must not hold. */
bool mrcd_wr_from_sq(uint8_t sq_opcode, uint8_t sq_flags, uint8_t *wr_opcode,
		     uint8_t *wr_flags);

/* An engine completion as a CQ entry's status, opcode and flags. */
void mrcd_cq_from_completion(const struct mrc_completion *wc, struct mrc_cq_entry *e);

#endif /* METAROCE_DAEMON_CORE_SHM_MAP_H */
