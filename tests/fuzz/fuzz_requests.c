/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * libFuzzer harness for the control handlers behind the request check (daemon/core:
 * mrcd_core_request): a library client of a daemon core in the unit tests' virtual-time
 * world (tests/unit/core_world.c), whose regions, CQs and QPs are made already, sends the
 * input's requests, any type with any payload, its memory passed along when a registration
 * names a part of it, while the two cores exchange whatever those requests make them send.
 * Oracles: ASan and UBSan on every handler; a status of 0 or -errno; and once both clients
 * close, nothing is left (no QP, CQ, region, window, lingering QP, shared page or mapping),
 * whatever the requests did. A failed check exits the process, which libFuzzer reports.
 *
 * Input: records of type (1 byte: an index into the library's requests), length (1 byte),
 * payload.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../unit/core_world.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const uint16_t types[] = {
	MRC_CTL_HELLO,	     MRC_CTL_PAGES,	  MRC_CTL_REG_MR,     MRC_CTL_DEREG_MR,
	MRC_CTL_ALLOC_MW,    MRC_CTL_DEALLOC_MW,  MRC_CTL_CREATE_CQ,  MRC_CTL_DESTROY_CQ,
	MRC_CTL_CREATE_QP,   MRC_CTL_CONNECT_QP,  MRC_CTL_READY_QP,   MRC_CTL_MODIFY_QP,
	MRC_CTL_UD_QP,	     MRC_CTL_RESOLVE,	  MRC_CTL_CREATE_SRQ, MRC_CTL_MODIFY_SRQ,
	MRC_CTL_DESTROY_SRQ, MRC_CTL_ERROR_QP,	  MRC_CTL_DESTROY_QP, MRC_CTL_STATUS,
};

/* The client's memory goes along with a registration whose one segment lies inside it, as a
 * memfd's pages would (the real io checks a memfd's size; this world's trusts the caller). */
static void *memory_for(const struct host *h, uint16_t type, const uint8_t *p, size_t len)
{
	struct {
		struct mrc_ctl_reg_mr r;
		struct mrc_ctl_mr_segment s;
	} reg;

	if (type != MRC_CTL_REG_MR || len != sizeof(reg))
		return NULL;
	memcpy(&reg, p, sizeof(reg));
	if (reg.s.fd_offset > REGION || reg.s.length > REGION - reg.s.fd_offset)
		return NULL;
	return h->cl.mem;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct world w;
	static uint8_t payload[256], reply[4096];
	size_t at = 0;

	world_init(&w, 5);
	while (at + 2 <= size) {
		uint16_t type = types[data[at] % (sizeof(types) / sizeof(types[0]))];
		size_t len = data[at + 1];
		struct host *h = &w.h[0];
		int err;

		at += 2;
		len = len < size - at ? len : size - at;
		memcpy(payload, data + at, len);
		at += len;
		memset(reply, 0xee, sizeof(reply));
		err = world_request(h, type, payload, (uint32_t)len,
				    memory_for(h, type, payload, len), reply, sizeof(reply));
		if (err > 0)
			abort(); /* a status is 0 or -errno */
		world_run(&w, 100 * US, NULL, 0, NULL);
	}
	world_check_reclaimed(&w);
	world_free(&w);
	return 0;
}
