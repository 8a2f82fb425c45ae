/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * libFuzzer harness for the control-socket request check (daemon/io/control.c): whatever a
 * local client sends, the check reads only the packet, and accepts only whole requests of the
 * types the daemon serves, queries without a payload (path queries with one QP's handle or
 * none); each handler then checks its payload's
 * exact shape (daemon/core, exercised by tests/verbs/hostile_client.c).
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "io/control.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct mrc_ctl_hdr req;
	uint8_t *copy = malloc(size ? size : 1); /* exactly sized: ASan sees any over-read */
	int rc;

	if (!copy)
		abort();
	memcpy(copy, data, size);
	rc = mrcd_control_check(copy, size, &req);
	if (rc != 0 && rc != -EPROTO && rc != -EOPNOTSUPP && rc != -EINVAL)
		abort();
	/* accepted: a whole, versioned request of a served type; the queries carry nothing */
	if (rc == 0 && (size != sizeof(req) + req.len || req.magic != MRC_CTL_MAGIC ||
			req.version != MRC_CTL_VERSION || req.type < MRC_CTL_STATUS ||
			req.type > MRC_CTL_TYPE_MAX))
		abort();
	if (rc == 0 && req.len &&
	    (req.type == MRC_CTL_STATUS || req.type == MRC_CTL_PEERS || req.type == MRC_CTL_QPS ||
	     req.type == MRC_CTL_METRICS || req.type == MRC_CTL_RELOAD ||
	     req.type == MRC_CTL_MONITOR || req.type == MRC_CTL_CONFIG ||
	     req.type == MRC_CTL_STAT_RESET))
		abort();
	if (rc == 0 && req.type == MRC_CTL_DRAIN_PLANE && req.len != sizeof(struct mrc_ctl_drain))
		abort();
	/* paths: all, or one QP's */
	if (rc == 0 && req.type == MRC_CTL_PATHS && req.len && req.len != sizeof(struct mrc_ctl_handle))
		abort();
	free(copy);
	return 0;
}
