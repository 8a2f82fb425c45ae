/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Proves that the wire header compiles unchanged as BPF C (clang -target bpf): the XDP
 * programs include exactly this file. Every struct is used through a packet pointer the way
 * an XDP parser walks it, so a layout the BPF backend treats differently fails the build.
 */
#include <linux/bpf.h>
#include <linux/types.h>

#include <metaroce/wire.h>

/* The BPF ABI must agree with the host on every offset the XDP programs will use. */
MRC_STATIC_ASSERT(sizeof(struct mrc_hdr) + sizeof(struct mrc_data_ext) == 56, "data header");
MRC_STATIC_ASSERT(sizeof(struct mrc_hdr) + sizeof(struct mrc_ack_ext) == 80, "ack packet");
MRC_STATIC_ASSERT(__builtin_offsetof(struct mrc_ack_ext, sack) % 8 == 0, "sack is u64-aligned");

int wire_header_walk(struct xdp_md *ctx);

__attribute__((section("xdp"), used)) int wire_header_walk(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct mrc_hdr *hdr = data;
	struct mrc_data_ext *ext = (void *)(hdr + 1);

	if ((void *)(ext + 1) > data_end)
		return XDP_PASS;
	if (hdr->version != MRC_WIRE_VERSION || hdr->opcode != MRC_OP_WRITE)
		return XDP_PASS;
	return ext->msg_len == ext->msg_off ? XDP_DROP : XDP_PASS;
}

char LICENSE[] __attribute__((section("license"), used)) = "Dual BSD/GPL";
