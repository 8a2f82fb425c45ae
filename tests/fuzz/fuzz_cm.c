/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * libFuzzer harness for the connection-management messages (lib/proto/cm.c, SPEC 17).
 *
 * Oracles, beyond "no crash, no sanitizer report":
 *  - a message the decoder takes re-encodes byte for byte: no field is ignored on receipt,
 *    every one is checked;
 *  - what it takes never carries more private data than its type allows, nor a QPN
 *    outside 2..2^24-1 where one is carried;
 *  - a refusal names a known reason.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proto/cm.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t again[sizeof(struct mrc_cm_msg) + 256];
	struct mrc_cm m;
	enum mrc_cm_error err = mrc_cm_decode(data, size, &m);
	size_t n;

	if (err != MRC_CM_OK) {
		if ((unsigned)err > MRC_CM_E_MAX || !strcmp(mrc_cm_error_name(err), "unknown"))
			abort();
		return 0;
	}
	if (m.private_len > mrc_cm_private_max(m.type) ||
	    m.private_data != data + sizeof(struct mrc_cm_msg))
		abort();
	if ((m.type == MRC_CM_REQ || m.type == MRC_CM_REP) && (m.qpn <= 1 || m.qpn > MRC_QPN_MAX))
		abort();
	n = mrc_cm_encode(&m, again, sizeof(again));
	if (n != size || memcmp(again, data, size))
		abort();
	return 0;
}
