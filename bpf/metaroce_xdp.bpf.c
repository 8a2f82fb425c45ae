/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The MetaRoCE receive fast path, attached to every plane interface.
 *
 * For a WRITE or READ response packet of a QP the daemon handed over, it checks, for a QP
 * that authenticates, the packet's tag (SipHash-2-4 of its headers, SPEC 14.6), then integrity
 * (the Internet checksum over the whole MetaRoCE packet, before anything else is believed),
 * the PSN against the receive window, the key, owner, access and bounds of the target region,
 * copies the payload into the region's pages (memory the daemon and the client map too),
 * then test-and-sets the PSN's bit in the SACK ring and tells the daemon in a ring buffer
 * event, so completions and acknowledgements follow; the packet itself goes no further.
 * Everything else of ours goes to the daemon (AF_XDP, or the kernel's UDP socket); anything
 * not MetaRoCE passes untouched. Maps and outcome codes: lib/include/metaroce/xdp.h.
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/udp.h>
#include <stddef.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#include <metaroce/siphash.h>
#include <metaroce/wire.h>
#include <metaroce/xdp.h>

/* Load-time settings (the skeleton's read-only data), not build variants. */
const volatile __u16 cfg_port = MRC_UDP_PORT_DEFAULT;
const volatile __u8 cfg_redirect;	/* 1: to the daemon over AF_XDP; 0: XDP_PASS */
const volatile __u32 cfg_wake_every = 8; /* the engine's ACK coalescing count (daemon sets) */

/* The daemon writes base and clears ring bits while the program runs: read them once. */
#define READ_ONCE(x) (*(const volatile __typeof__(x) *)&(x))

#define CSUM_CHUNK 512			/* bpf_csum_diff's limit */
#define MAX_CSUM_CHUNKS 18		/* 9216 bytes: a jumbo frame */

/* A region's pages; sizes, not types, so the definition needs no BTF of its own. */
struct page_map {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE | BPF_F_INNER_MAP);
	__uint(max_entries, 1);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, MRC_XDP_PAGE);
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, MRC_XDP_MAX_QPS);
	__type(key, __u32);
	__type(value, struct mrc_xdp_qp);
} mrc_qps SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 64);
	__type(key, __u32);	/* ifindex */
	__type(value, struct mrc_xdp_plane);
} mrc_planes SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, MRC_XDP_MAX_MRS);
	__type(key, __u32);
	__type(value, struct mrc_xdp_mr);
} mrc_mrs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, MRC_XDP_MAX_MRS);
	__type(key, __u32);
	__array(values, struct page_map);
} mrc_mr_pages SEC(".maps");

/* The template of a worker's ring (the daemon makes each, of this size) */
struct event_ring {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, MRC_XDP_EVENT_RING_BYTES);
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, MRC_XDP_MAX_WORKERS);
	__type(key, __u32);
	__array(values, struct event_ring);
} mrc_events SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, MRC_XDP_MAX_WORKERS);
	__type(key, __u32);
	__type(value, struct mrc_xdp_wake);
} mrc_wake SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, MRC_XDP_OUTCOMES);
	__type(key, __u32);
	__type(value, __u64);
} mrc_outcomes SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_XSKMAP);
	__uint(max_entries, MRC_MAX_PLANES * MRC_XDP_MAX_QUEUES);
	__type(key, __u32);
	__type(value, __u32);
} mrc_xsks SEC(".maps");

/* The checksum's tail, padded to whole words: a per-CPU scratch buffer off the small stack. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u8[CSUM_CHUNK + 4]);
} csum_scratch SEC(".maps");

extern int bpf_dynptr_from_xdp(struct xdp_md *x, __u64 flags,
			       struct bpf_dynptr *ptr__uninit) __ksym;
extern void *bpf_dynptr_slice(const struct bpf_dynptr *ptr, __u32 offset, void *buffer__opt,
			      __u32 buffer__szk) __ksym;
extern int bpf_dynptr_copy(struct bpf_dynptr *dst_ptr, __u32 dst_off,
			   struct bpf_dynptr *src_ptr, __u32 src_off, __u32 size) __ksym;

int metaroce_xdp(struct xdp_md *ctx);	/* the entry point: found by section and name */

static __always_inline void count(enum mrc_xdp_outcome o)
{
	__u32 key = o;
	__u64 *n = bpf_map_lookup_elem(&mrc_outcomes, &key);

	if (n)
		(*n)++;
}

/* To the daemon's AF_XDP socket for the plane it arrived on (looked up once, at the top) and
 * its queue, or up the stack without one. */
static __always_inline int to_daemon(struct xdp_md *ctx, __u32 plane, enum mrc_xdp_outcome o)
{
	__u32 queue = ctx->rx_queue_index, key;

	count(o);
	if (!cfg_redirect || queue >= MRC_XDP_MAX_QUEUES || plane >= MRC_MAX_PLANES)
		return XDP_PASS;
	key = plane * MRC_XDP_MAX_QUEUES + queue;
	return bpf_redirect_map(&mrc_xsks, key, XDP_PASS);
}

static __always_inline int not_ours(void)
{
	count(MRC_XDP_NOT_OURS);
	return XDP_PASS;
}

static __always_inline int dropped(enum mrc_xdp_outcome o)
{
	count(o);
	return XDP_DROP;
}

static __always_inline __u16 fold(__u64 sum)
{
	sum = (sum & 0xffffffff) + (sum >> 32);
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	return (__u16)((sum & 0xffff) + (sum >> 16));
}

/*
 * True when the MetaRoCE packet at off, len bytes, sums (csum field included) to 0xffff.
 * Slices point into the frame where it is linear and are copied out where it is not (a
 * jumbo frame in fragments), so the sum costs no copy in the common case.
 */
static __always_inline int checksum_ok(struct bpf_dynptr *pkt, __u32 off, __u32 len)
{
	__u32 zero = 0, done = 0, tail;
	__s64 sum = 0;
	__u8 *buf, *p;

	buf = bpf_map_lookup_elem(&csum_scratch, &zero);
	if (!buf)
		return 0;
	for (int i = 0; i < MAX_CSUM_CHUNKS; i++) {
		if (done + CSUM_CHUNK > len)
			break;
		p = bpf_dynptr_slice(pkt, off + done, buf, CSUM_CHUNK);
		if (!p)
			return 0;
		sum = bpf_csum_diff(NULL, 0, (void *)p, CSUM_CHUNK, (__u32)sum);
		done += CSUM_CHUNK;
	}
	tail = len - done;
	if (tail >= CSUM_CHUNK)
		return 0;	/* longer than any frame we accept */
	if (tail) {
		/* the compiler knows tail < CSUM_CHUNK and would drop the mask the verifier needs */
		asm volatile("" : "+r"(tail));
		tail &= CSUM_CHUNK - 1;
		if (!tail)
			return 0;
		/* RFC 1071 pads an odd length with zeros: so does the word after the tail */
		*(__u32 *)(buf + (tail & (CSUM_CHUNK - 4))) = 0;
		if (bpf_dynptr_read(buf, tail, pkt, off + done, 0))
			return 0;
		sum = bpf_csum_diff(NULL, 0, (void *)buf, (tail + 3) & ~3u, (__u32)sum);
	}
	return fold((__u32)sum) == 0xffff;
}

/* Bit psn % 256 of the QP's SACK ring. */
static __always_inline int ring_bit(const struct mrc_xdp_qp *qp, __u32 psn)
{
	__u32 i = psn % MRC_SACK_BITS;

	return (READ_ONCE(qp->ring[i / 64]) >> (i % 64)) & 1;
}

/*
 * Whether the engine acknowledges this packet at once [R-234] (last: it ends its message), or
 * the QP has placed its cfg_wake_every-th packet since the last that did: then a
 * sleeping daemon is woken for it. Counting is a locked add, which also orders the event's
 * reservation before the read of `asleep` (see xdp.h).
 */
static __always_inline int wake_worthy(struct mrc_xdp_qp *qp, const struct mrc_hdr *hdr,
				       __u32 kind, __u8 ce, int last)
{
	__u32 psn = bpf_ntohl(hdr->psn), base = READ_ONCE(qp->base);
	__u64 n = __sync_fetch_and_add(&qp->placed_unwoken, 1) + 1;
	int urgent = kind == MRC_XDP_EV_DUPLICATE || ce || last ||
		     (bpf_ntohs(hdr->flags) & MRC_F_ACK_REQ) ||
		     (psn != base && !ring_bit(qp, psn - 1)) ||	/* opens a gap */
		     (psn == base && ring_bit(qp, psn + 1));		/* fills the one at base */

	if (urgent || n >= cfg_wake_every) {
		__sync_fetch_and_add(&qp->placed_unwoken, -n);
		return 1;
	}
	return 0;
}

static __always_inline int send_event(__u32 kind, struct xdp_md *ctx, struct mrc_xdp_qp *qp,
				      const struct mrc_hdr *hdr, const __u64 *peer, __u16 sport,
				      __u8 ce, __u32 hdr_off, int last)
{
	__u32 worker = READ_ONCE(qp->worker);
	void *ring = bpf_map_lookup_elem(&mrc_events, &worker);
	struct mrc_xdp_event *ev;
	struct mrc_xdp_wake *wake;
	__u64 flags = BPF_RB_NO_WAKEUP;
	int worthy;

	if (!ring)
		return -1; /* a worker without a ring: the daemon's packet, unplaced */
	ev = bpf_ringbuf_reserve(ring, sizeof(*ev), 0);
	if (!ev)
		return -1;
	ev->kind = kind;
	ev->ifindex = ctx->ingress_ifindex;
	__builtin_memcpy(ev->peer, peer, 16);
	ev->sport = sport;
	ev->ce = ce;
	ev->reserved = 0;
	ev->reserved2 = 0;
	if (bpf_xdp_load_bytes(ctx, hdr_off, ev->hdr, sizeof(ev->hdr))) {
		bpf_ringbuf_discard(ev, BPF_RB_NO_WAKEUP);
		return -1;
	}
	worthy = wake_worthy(qp, hdr, kind, ce, last);
	wake = bpf_map_lookup_elem(&mrc_wake, &worker);
	if (wake && READ_ONCE(wake->asleep)) {
		/* one wakeup per sleep: whoever takes `asleep` from 1 to 0 wakes the daemon, and
		 * later packets of the same burst see it awake (each wakeup is an interrupt) */
		if (worthy && __sync_val_compare_and_swap(&wake->asleep, 1, 0) == 1) {
			flags = BPF_RB_FORCE_WAKEUP;
			__sync_fetch_and_add(&wake->wakeups, 1);
		} else if (!worthy) {
			__sync_fetch_and_add(&wake->quiet, 1);
		}
	}
	bpf_ringbuf_submit(ev, flags);
	return 0;
}

/* Jumbo frames arrive in fragments: everything past the headers is read through the dynptr. */
/*
 * Whether the 8-byte tag at tag_off is SipHash-2-4 under the QP's key of the common and data
 * extension headers (56 bytes, in the frame's linear part), as lib/proto/auth.c computes it.
 */
static __always_inline int tag_ok(const struct mrc_xdp_qp *qp, const struct mrc_hdr *hdr,
				  const struct bpf_dynptr *pkt, __u32 tag_off)
{
	__u64 words[(sizeof(struct mrc_hdr) + sizeof(struct mrc_data_ext)) / 8], tag;

	for (int i = 0; i < (int)(sizeof(words) / sizeof(words[0])); i++) {
		__builtin_memcpy(&words[i], (const __u8 *)hdr + 8 * i, 8);
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
		words[i] = __builtin_bswap64(words[i]); /* SipHash reads little-endian words */
#endif
	}
	if (bpf_dynptr_read(&tag, sizeof(tag), pkt, tag_off, 0))
		return 0;
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	tag = __builtin_bswap64(tag);
#endif
	return mrc_siphash24(READ_ONCE(qp->auth_k0), READ_ONCE(qp->auth_k1), words,
			     sizeof(words) / sizeof(words[0])) == tag;
}

SEC("xdp.frags")
int metaroce_xdp(struct xdp_md *ctx)
{
	__u8 *data = (__u8 *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = (void *)data;
	struct mrc_data_ext *ext;
	struct mrc_xdp_qp *qp;
	struct mrc_xdp_mr *mr;
	struct mrc_hdr *hdr;
	struct udphdr *udp;
	struct bpf_dynptr src, dst;
	__u64 peer[2] = {};	/* the source address, IPv4-mapped */
	__u64 dest[2] = {};	/* the destination address, the same way */
	__u32 l4, off, mrc_len, payload, trailer, qpn, psn, key, slot, idx, pos, src_off, left;
	__u64 bit, old, raddr, need, pos64;
	__u32 base, ifindex;
	struct mrc_xdp_plane *plane;
	const __u64 *want;
	__u16 sport;
	__u8 ce;
	int last;
	void *pages;

	if ((void *)(eth + 1) > end)
		return not_ours();
	if (eth->h_proto == bpf_htons(ETH_P_IP)) {
		struct iphdr *ip = (void *)(eth + 1);

		if ((void *)(ip + 1) > end || ip->protocol != IPPROTO_UDP || ip->ihl < 5 ||
		    (ip->frag_off & bpf_htons(0x3fff)))
			return not_ours();	/* fragments are the kernel's to reassemble */
		l4 = sizeof(*eth) + ip->ihl * 4;
		((__u8 *)peer)[10] = ((__u8 *)peer)[11] = 0xff;
		__builtin_memcpy((__u8 *)peer + 12, &ip->saddr, 4);
		((__u8 *)dest)[10] = ((__u8 *)dest)[11] = 0xff;
		__builtin_memcpy((__u8 *)dest + 12, &ip->daddr, 4);
		ce = (ip->tos & 3) == 3;
	} else if (eth->h_proto == bpf_htons(ETH_P_IPV6)) {
		struct ipv6hdr *ip6 = (void *)(eth + 1);

		if ((void *)(ip6 + 1) > end || ip6->nexthdr != IPPROTO_UDP)
			return not_ours();
		l4 = sizeof(*eth) + sizeof(*ip6);
		__builtin_memcpy(peer, &ip6->saddr, 16);
		__builtin_memcpy(dest, &ip6->daddr, 16);
		ce = ((bpf_ntohl(*(__u32 *)ip6) >> 20) & 3) == 3;
	} else {
		return not_ours();
	}
	udp = (void *)(data + (l4 & 0xff));
	if ((void *)(udp + 1) > end || udp->dest != bpf_htons(cfg_port))
		return not_ours();
	/* only what is addressed to us on this plane: a packet for another address is the
	 * kernel's, and the host's firewall rules apply to it as to any packet */
	ifindex = ctx->ingress_ifindex;
	plane = bpf_map_lookup_elem(&mrc_planes, &ifindex);
	if (!plane || ((const __u64 *)plane->addr)[0] != dest[0] ||
	    ((const __u64 *)plane->addr)[1] != dest[1])
		return not_ours();
	sport = bpf_ntohs(udp->source);
	off = (l4 & 0xff) + sizeof(*udp);
	mrc_len = bpf_ntohs(udp->len);
	if (mrc_len < sizeof(*udp) + sizeof(*hdr) ||
	    off + mrc_len - sizeof(*udp) > bpf_xdp_get_buff_len(ctx))
		return dropped(MRC_XDP_TRUNCATED);
	mrc_len -= sizeof(*udp);
	hdr = (void *)(data + off);
	if ((void *)(hdr + 1) > end)
		return dropped(MRC_XDP_TRUNCATED);
	if (hdr->version != MRC_WIRE_VERSION)
		return to_daemon(ctx, plane->index, MRC_XDP_BAD_VERSION);
	if (hdr->opcode != MRC_OP_WRITE && hdr->opcode != MRC_OP_READ_RESP)
		return to_daemon(ctx, plane->index, MRC_XDP_TO_DAEMON);
	ext = (void *)(hdr + 1);
	if ((void *)(ext + 1) > end)
		return dropped(MRC_XDP_TRUNCATED);
	/* a sealed payload is the daemon's to open (auth = full) */
	if (hdr->flags & bpf_htons(MRC_F_SEALED))
		return to_daemon(ctx, plane->index, MRC_XDP_TO_DAEMON);
	payload = bpf_ntohs(hdr->payload_len);
	/* an authentication trailer follows the payload, outside the checksum */
	trailer = hdr->flags & bpf_htons(MRC_F_AUTH) ? MRC_AUTH_TAG_LEN : 0;
	if (sizeof(*hdr) + sizeof(*ext) + payload + trailer > mrc_len)
		return dropped(MRC_XDP_TRUNCATED);
	/* malformed, as the engine's decoder sees it: the decoder says why */
	if (sizeof(*hdr) + sizeof(*ext) + payload + trailer < mrc_len || !payload ||
	    ext->imm || ext->rsn || bpf_ntohl(ext->msg_len) > MRC_MAX_MSG_LEN ||
	    bpf_ntohl(ext->msg_off) > bpf_ntohl(ext->msg_len) ||
	    payload > bpf_ntohl(ext->msg_len) - bpf_ntohl(ext->msg_off))
		return to_daemon(ctx, plane->index, MRC_XDP_TO_DAEMON);
	last = payload == bpf_ntohl(ext->msg_len) - bpf_ntohl(ext->msg_off); /* ends its message */
	qpn = bpf_ntohl(hdr->dst_qpn);
	slot = MRC_QP_SLOT(qpn);
	qp = bpf_map_lookup_elem(&mrc_qps, &slot);
	if (!qp || !qpn || READ_ONCE(qp->qpn) != qpn)
		return to_daemon(ctx, plane->index, MRC_XDP_UNKNOWN_QP);
	if (!(READ_ONCE(qp->flags) &
	      (hdr->opcode == MRC_OP_WRITE ? MRC_XDP_QP_PLACE : MRC_XDP_QP_PLACE_READ)))
		return to_daemon(ctx, plane->index, MRC_XDP_TO_DAEMON);
	/* only the QP's peer, on a plane it has, from its address there (as the daemon checks) */
	if (plane->index >= MRC_MAX_PLANES || !(qp->peer_planes >> plane->index & 1))
		return to_daemon(ctx, plane->index, MRC_XDP_WRONG_PEER);
	want = (const __u64 *)qp->peer[plane->index & (MRC_MAX_PLANES - 1)];
	if (want[0] != peer[0] || want[1] != peer[1])
		return to_daemon(ctx, plane->index, MRC_XDP_WRONG_PEER);
	if (bpf_dynptr_from_xdp(ctx, 0, &src))
		return to_daemon(ctx, plane->index, MRC_XDP_PLACE_FAILED);
	/* an authenticating QP's packet is its peer's only with the right tag: before anything
	 * of it is believed, or answered (a duplicate's event is an ACK) */
	if (READ_ONCE(qp->flags) & MRC_XDP_QP_AUTH) {
		if (!trailer || !tag_ok(qp, hdr, &src, off + sizeof(*hdr) + sizeof(*ext) + payload))
			return dropped(MRC_XDP_BAD_TAG);
	} else if (trailer) {
		return to_daemon(ctx, plane->index, MRC_XDP_TO_DAEMON); /* the engine knows what to make of it */
	}
	/* nothing below is believed before this */
	if (!checksum_ok(&src, off, mrc_len - trailer))
		return dropped(MRC_XDP_BAD_CHECKSUM);
	psn = bpf_ntohl(hdr->psn);
	base = READ_ONCE(qp->base);
	if (psn - base >= MRC_SACK_BITS) {
		/* beyond the window: dropped and counted, but its CE mark counts in the
		 * engine's ce_count, out-of-window packets included */
		if ((__s32)(psn - base) >= 0)
			return ce ? to_daemon(ctx, plane->index, MRC_XDP_TO_DAEMON)
				  : dropped(MRC_XDP_ABOVE_WINDOW);
		__sync_fetch_and_add(&qp->duplicates, 1);
		if (send_event(MRC_XDP_EV_DUPLICATE, ctx, qp, hdr, peer, sport, ce, off, 0))
			return to_daemon(ctx, plane->index, MRC_XDP_EVENT_LOST);
		return dropped(MRC_XDP_BELOW_WINDOW);
	}
	idx = psn % MRC_SACK_BITS;
	bit = 1ull << (idx % 64);
	if (READ_ONCE(qp->ring[idx / 64]) & bit) {
		__sync_fetch_and_add(&qp->duplicates, 1);
		if (send_event(MRC_XDP_EV_DUPLICATE, ctx, qp, hdr, peer, sport, ce, off, 0))
			return to_daemon(ctx, plane->index, MRC_XDP_EVENT_LOST);
		return dropped(MRC_XDP_DUPLICATE);
	}
	key = bpf_ntohl(ext->rkey);
	raddr = bpf_be64_to_cpu(ext->raddr);
	/* a response only to a READ the daemon said it sent, within its sink; the
	 * entry read whole between two equal, even readings of its sequence (xdp.h) */
	if (hdr->opcode == MRC_OP_READ_RESP) {
		__u32 msn = bpf_ntohl(ext->msn);
		struct mrc_xdp_read *rd = &qp->reads[msn & (MRC_XDP_MAX_READS - 1)];
		__u32 seq = READ_ONCE(rd->seq), rd_msn = READ_ONCE(rd->msn);
		__u32 rd_key = READ_ONCE(rd->key), rd_len = READ_ONCE(rd->len);
		__u64 rd_addr = READ_ONCE(rd->addr);

		/* as the engine checks: its msn, sink key and length, and the address its sink's
		 * plus msg_off (which with payload stays within msg_len: checked above) */
		if ((seq & 1) || READ_ONCE(rd->seq) != seq || !rd_len || rd_msn != msn ||
		    rd_key != key || rd_len != bpf_ntohl(ext->msg_len) ||
		    raddr != rd_addr + bpf_ntohl(ext->msg_off))
			return to_daemon(ctx, plane->index, MRC_XDP_NO_READ);
	}
	/* the region: its key, its owner, the access the opcode needs, the bounds */
	slot = MRC_KEY_SLOT(key);
	mr = bpf_map_lookup_elem(&mrc_mrs, &slot);
	need = hdr->opcode == MRC_OP_WRITE ? MRC_XDP_ACCESS_REMOTE_WRITE
					   : MRC_XDP_ACCESS_LOCAL_WRITE;
	if (!mr || !key || mr->key != key || mr->owner != qp->owner || !(mr->access & need))
		return to_daemon(ctx, plane->index, MRC_XDP_BAD_KEY);
	if (raddr < mr->addr || payload > mr->len || raddr - mr->addr > mr->len - payload)
		return to_daemon(ctx, plane->index, MRC_XDP_OUT_OF_BOUNDS);
	pages = bpf_map_lookup_elem(&mrc_mr_pages, &slot);
	if (!pages)
		return to_daemon(ctx, plane->index, MRC_XDP_PLACE_FAILED);
	/* the slot may have been freed and handed to another region since the key was read:
	 * its pages are only this region's while the key still says so */
	if (READ_ONCE(mr->key) != key)
		return to_daemon(ctx, plane->index, MRC_XDP_BAD_KEY);
	/* the copy: page by page of the region, straight from the frame */
	pos64 = (__u64)mr->offset + (raddr - mr->addr);
	if (pos64 + payload > 0xffffffffull)
		return to_daemon(ctx, plane->index, MRC_XDP_OUT_OF_BOUNDS);	/* beyond what a page map holds */
	pos = (__u32)pos64;
	src_off = off + sizeof(*hdr) + sizeof(*ext);
	left = payload;
	for (int i = 0; i < MRC_XDP_MAX_PAGES_PER_PACKET && left; i++) {
		__u32 page = pos / MRC_XDP_PAGE, in_page = pos % MRC_XDP_PAGE;
		__u32 n = MRC_XDP_PAGE - in_page < left ? MRC_XDP_PAGE - in_page : left;
		void *p = bpf_map_lookup_elem(pages, &page);

		if (!p || bpf_dynptr_from_mem(p, MRC_XDP_PAGE, 0, &dst) ||
		    bpf_dynptr_copy(&dst, in_page, &src, src_off, n))
			return to_daemon(ctx, plane->index, MRC_XDP_PLACE_FAILED);
		pos += n;
		src_off += n;
		left -= n;
	}
	if (left)
		return to_daemon(ctx, plane->index, MRC_XDP_PLACE_FAILED);
	/* placed: now, and only now, it counts as received */
	old = __sync_fetch_and_or(&qp->ring[idx / 64], bit);
	if (old & bit) {
		__sync_fetch_and_add(&qp->duplicates, 1);
		if (send_event(MRC_XDP_EV_DUPLICATE, ctx, qp, hdr, peer, sport, ce, off, 0))
			return to_daemon(ctx, plane->index, MRC_XDP_EVENT_LOST);
		return dropped(MRC_XDP_DUPLICATE);
	}
	if (psn - READ_ONCE(qp->base) >= MRC_SACK_BITS || READ_ONCE(qp->qpn) != qpn) {
		/* the daemon moved the window past it meanwhile, or gave the slot to another QP:
		 * that bit is not ours to set */
		__sync_fetch_and_and(&qp->ring[idx / 64], ~bit);
		return dropped(MRC_XDP_BELOW_WINDOW);
	}
	if (send_event(MRC_XDP_EV_PLACED, ctx, qp, hdr, peer, sport, ce, off, last)) {
		/* the daemon would never hear of it: take it back and let the daemon do it all */
		__sync_fetch_and_and(&qp->ring[idx / 64], ~bit);
		return to_daemon(ctx, plane->index, MRC_XDP_EVENT_LOST);
	}
	if (ce)
		__sync_fetch_and_add(&qp->ce_packets, 1);
	__sync_fetch_and_add(&qp->placed_packets, 1);
	__sync_fetch_and_add(&qp->placed_bytes, payload);
	return dropped(MRC_XDP_PLACED);
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
