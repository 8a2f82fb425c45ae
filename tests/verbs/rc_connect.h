/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* The test programs' RC QP set-up, as a two-sided RC program writes it. */
#ifndef METAROCE_TESTS_VERBS_RC_CONNECT_H
#define METAROCE_TESTS_VERBS_RC_CONNECT_H

#include <infiniband/verbs.h>
#include <stdint.h>

/*
 * INIT with `access`, RTR to QP dest at gid (MTU 1024, both PSNs 1, `rd_atomic` READs and
 * atomics each way), RTS. 0, or the errno of the step that failed, which *step names.
 */
int rc_connect(struct ibv_qp *qp, uint32_t dest, const union ibv_gid *gid, unsigned access,
	       uint8_t rd_atomic, const char **step);

#endif
