/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * libFuzzer harness for the control-socket request check (daemon/control.c): whatever a
 * local client sends, the check reads only the packet, and accepts exactly the well-formed
 * requests the daemon serves.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/control.h"

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
	if (rc != 0 && rc != -EPROTO && rc != -EOPNOTSUPP)
		abort();
	if (rc == 0 && (size != sizeof(req) || req.magic != MRC_CTL_MAGIC ||
			(req.type != MRC_CTL_STATUS && req.type != MRC_CTL_PEERS)))
		abort();
	free(copy);
	return 0;
}
