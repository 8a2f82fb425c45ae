/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
#include "xdp_env.h"

#include <arpa/inet.h>
#include <errno.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/udp.h>
#include <net/if.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <linux/btf.h>

#include "proto/codec.h"

static void die(const char *what)
{
	fprintf(stderr, "xdp: %s: %s\n", what, strerror(errno));
	exit(1);
}

void xdp_env_open(struct xdp_env *env, const char *object, const char *who)
{
	struct ifreq ifr = { 0 };
	int sock;

	if (unshare(CLONE_NEWNET))
		die("unshare(CLONE_NEWNET) (run as root)");
	sock = socket(AF_INET, SOCK_DGRAM, 0);
	strcpy(ifr.ifr_name, "lo");
	if (sock < 0 || ioctl(sock, SIOCGIFFLAGS, &ifr) ||
	    (ifr.ifr_flags |= IFF_UP, ioctl(sock, SIOCSIFFLAGS, &ifr)))
		die("bringing lo up");
	close(sock);
	/* the one kernel feature to probe: without it the fast path cannot exist here */
	{
		struct btf *vmlinux = btf__load_vmlinux_btf();

		if (!vmlinux || btf__find_by_name_kind(vmlinux, "bpf_dynptr_copy", BTF_KIND_FUNC) < 0) {
			printf("SKIP: this kernel has no bpf_dynptr_copy kfunc (Linux 6.15 or later): "
			       "the XDP fast path cannot run here\n");
			exit(77);
		}
		btf__free(vmlinux);
	}
	env->obj = bpf_object__open_file(object, NULL);
	if (!env->obj)
		die(object);
	if (bpf_object__load(env->obj)) {
		fprintf(stderr, "%s: this kernel refuses the XDP program: %s\n", who,
			strerror(errno));
		exit(1);
	}
	env->prog_fd = bpf_program__fd(bpf_object__find_program_by_name(env->obj, "metaroce_xdp"));
	env->qps_fd = bpf_object__find_map_fd_by_name(env->obj, "mrc_qps");
	env->mrs_fd = bpf_object__find_map_fd_by_name(env->obj, "mrc_mrs");
	env->pages_fd = bpf_object__find_map_fd_by_name(env->obj, "mrc_mr_pages");
	env->outcomes_fd = bpf_object__find_map_fd_by_name(env->obj, "mrc_outcomes");
	env->planes_fd = bpf_object__find_map_fd_by_name(env->obj, "mrc_planes");
	if (env->prog_fd < 0 || env->qps_fd < 0 || env->mrs_fd < 0 || env->pages_fd < 0 ||
	    env->outcomes_fd < 0 || env->planes_fd < 0)
		die("the program's maps");
	/* the rings of workers 0 and 1, as the daemon makes them */
	for (uint32_t k = 0; k < 2; k++) {
		struct bpf_map *rings = bpf_object__find_map_by_name(env->obj, "mrc_events");
		int fd = bpf_map_create(BPF_MAP_TYPE_RINGBUF, "test_events", 0, 0,
					MRC_XDP_EVENT_RING_BYTES, NULL);

		if (fd < 0 || bpf_map_update_elem(bpf_map__fd(rings), &k, &fd, BPF_ANY))
			die("an event ring in mrc_events");
		env->events_fd[k] = fd;
	}
	env->qps = mmap(NULL, MRC_XDP_MAX_QPS * sizeof(struct mrc_xdp_qp), PROT_READ | PROT_WRITE,
			MAP_SHARED, env->qps_fd, 0);
	if (env->qps == MAP_FAILED)
		die("mmap of mrc_qps");
	env->wake = mmap(NULL, MRC_XDP_MAX_WORKERS * sizeof(struct mrc_xdp_wake),
			 PROT_READ | PROT_WRITE, MAP_SHARED,
			 bpf_object__find_map_fd_by_name(env->obj, "mrc_wake"), 0);
	if (env->wake == MAP_FAILED)
		die("mmap of mrc_wake");
	/* test runs arrive on this namespace's loopback (ifindex 1): plane 0 */
	xdp_env_set_plane_addr(env, false);
}

void xdp_env_close(struct xdp_env *env)
{
	close(env->events_fd[0]);
	close(env->events_fd[1]);
	bpf_object__close(env->obj);
}

void xdp_env_set_qp(const struct xdp_env *env, uint32_t qpn, uint32_t base, uint32_t flags,
		    const uint8_t peer[16])
{
	struct mrc_xdp_qp q = { .qpn = qpn, .base = base, .flags = flags, .owner = XDP_ENV_OWNER,
				.peer_planes = 1 };
	uint32_t slot = qpn % MRC_XDP_MAX_QPS;

	memcpy(q.peer[0], peer, 16);
	if (bpf_map_update_elem(env->qps_fd, &slot, &q, BPF_ANY))
		die("mrc_qps update");
}

void xdp_env_set_plane_addr(const struct xdp_env *env, bool ipv6)
{
	struct mrc_xdp_plane plane = { .index = 0 };
	static const uint8_t v4[4] = { 198, 18, 0, 2 };

	if (ipv6) {
		plane.addr[0] = 0x20;
		plane.addr[15] = 2;
	} else {
		mrc_addr_from_v4(plane.addr, v4);
	}
	if (bpf_map_update_elem(env->planes_fd, &(uint32_t){ 1 }, &plane, BPF_ANY))
		die("mrc_planes update");
}

struct mrc_xdp_qp *xdp_env_qp(const struct xdp_env *env, uint32_t qpn)
{
	return &env->qps[qpn % MRC_XDP_MAX_QPS];
}

void xdp_env_set_qp_auth(const struct xdp_env *env, uint32_t qpn, const struct mrc_auth_key *key)
{
	struct mrc_xdp_qp *q = xdp_env_qp(env, qpn);

	q->auth_k0 = key->k0;
	q->auth_k1 = key->k1;
	q->flags |= MRC_XDP_QP_AUTH;
}

uint8_t *xdp_env_add_region(const struct xdp_env *env, uint32_t slot, uint32_t key,
			    uint32_t access, uint64_t addr, uint64_t len, uint32_t offset)
{
	LIBBPF_OPTS(bpf_map_create_opts, opts, .map_flags = BPF_F_MMAPABLE | BPF_F_INNER_MAP);
	struct mrc_xdp_mr mr = { .key = key, .access = access, .owner = XDP_ENV_OWNER,
				 .offset = offset, .addr = addr, .len = len };
	int fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, "mrc_region", 4, MRC_XDP_PAGE, XDP_ENV_PAGES,
				&opts);
	uint8_t *mem;

	if (fd < 0)
		die("creating a region's page map");
	mem = mmap(NULL, XDP_ENV_PAGES * MRC_XDP_PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (mem == MAP_FAILED)
		die("mmap of the page map");
	if (bpf_map_update_elem(env->mrs_fd, &slot, &mr, BPF_ANY) ||
	    bpf_map_update_elem(env->pages_fd, &slot, &fd, BPF_ANY))
		die("registering the region");
	return mem;
}

uint64_t xdp_env_outcome(const struct xdp_env *env, enum mrc_xdp_outcome o)
{
	int ncpu = libbpf_num_possible_cpus();
	uint64_t v[256] = { 0 }, sum = 0;
	uint32_t key = o;

	if (ncpu > 256 || bpf_map_lookup_elem(env->outcomes_fd, &key, v))
		return 0;
	for (int i = 0; i < ncpu; i++)
		sum += v[i];
	return sum;
}

uint8_t frame_payload_byte(uint32_t psn, uint32_t i)
{
	return (uint8_t)(psn * 31 + i * 7 + (i >> 8));
}

struct frame frame_build_part(const struct frame_spec *s, uint32_t msg_len)
{
	static uint8_t payload[9000];
	struct frame f = { 0 };
	struct ethhdr *eth = (void *)f.b;
	struct mrc_packet pkt = { .opcode = s->opcode,
				  .flags = (uint16_t)(s->flags | (s->auth ? MRC_F_AUTH : 0)),
				  .dst_qpn = s->qpn, .psn = s->psn, .path_id = 3 };
	struct udphdr *udp;
	uint32_t l4;
	size_t n;

	memset(eth->h_dest, 2, ETH_ALEN);
	memset(eth->h_source, 4, ETH_ALEN);
	if (s->ipv6) {
		struct ipv6hdr *ip6 = (void *)(eth + 1);
		uint32_t first = htonl(6u << 28);

		eth->h_proto = htons(ETH_P_IPV6);
		if (s->ce)
			first |= htonl(3u << 20);
		memcpy(ip6, &first, 4);
		ip6->nexthdr = IPPROTO_UDP;
		ip6->hop_limit = 64;
		ip6->saddr.s6_addr[0] = 0x20;
		ip6->saddr.s6_addr[15] = s->src_last ? s->src_last : 1;
		ip6->daddr.s6_addr[0] = 0x20;
		ip6->daddr.s6_addr[15] = 2;
		l4 = sizeof(*eth) + sizeof(*ip6);
	} else {
		struct iphdr *ip = (void *)(eth + 1);

		eth->h_proto = htons(ETH_P_IP);
		ip->version = 4;
		ip->ihl = 5;
		ip->ttl = 64;
		ip->tos = s->ce ? 3 : 0;
		ip->protocol = IPPROTO_UDP;
		ip->saddr = htonl(0xc6120000 | (s->src_last ? s->src_last : 1));
		ip->daddr = htonl(0xc6120002);
		l4 = sizeof(*eth) + sizeof(*ip);
	}
	f.mrc = l4 + sizeof(struct udphdr);
	for (uint32_t i = 0; i < s->payload && i < sizeof(payload); i++)
		payload[i] = frame_payload_byte(s->psn, i);
	if (mrc_opcode_is_data(s->opcode)) {
		if (s->opcode == MRC_OP_SEND)
			pkt.u.data = (struct mrc_data){ .msg_len = s->payload };
		else
			pkt.u.data = (struct mrc_data){ .msg_len = msg_len ? msg_len : s->payload,
							.rkey = s->rkey, .raddr = s->raddr };
		pkt.payload = payload;
		pkt.payload_len = (uint16_t)s->payload;
	}
	if (mrc_encode(&pkt, f.b + f.mrc, sizeof(f.b) - f.mrc - MRC_AUTH_TAG_LEN, &n)) {
		fprintf(stderr, "xdp: the encoder refused a test packet\n");
		exit(1);
	}
	if (s->auth) { /* the tag as the engine writes it (lib/proto/auth.c) */
		mrc_auth_put_tag(s->auth, f.b + f.mrc, mrc_header_len(s->opcode), f.b + f.mrc + n);
		n += MRC_AUTH_TAG_LEN;
	}
	f.mrc_len = (uint32_t)n;
	udp = (void *)(f.b + l4);
	udp->source = htons(50000);
	udp->dest = htons(s->port ? s->port : MRC_UDP_PORT_DEFAULT);
	udp->len = htons((uint16_t)(sizeof(*udp) + n));
	f.len = f.mrc + (uint32_t)n;
	if (s->ipv6)
		((struct ipv6hdr *)(eth + 1))->payload_len = htons((uint16_t)(sizeof(*udp) + n));
	else
		((struct iphdr *)(eth + 1))->tot_len = htons((uint16_t)(f.len - sizeof(*eth)));
	return f;
}

void frame_source(const struct frame_spec *s, uint8_t addr[16])
{
	memset(addr, 0, 16);
	if (s->ipv6) {
		addr[0] = 0x20;
	} else {
		addr[10] = addr[11] = 0xff;
		addr[12] = 198;
		addr[13] = 18;
	}
	addr[15] = s->src_last ? s->src_last : 1;
}

int xdp_env_run(const struct xdp_env *env, const struct frame *f, uint32_t len, uint32_t repeat,
		uint32_t *ns)
{
	struct xdp_md ctx = { .data_end = len, .ingress_ifindex = 1 };
	LIBBPF_OPTS(bpf_test_run_opts, opts, .data_in = f->b, .data_size_in = len,
		    .ctx_in = &ctx, .ctx_size_in = sizeof(ctx), .repeat = repeat);

	if (bpf_prog_test_run_opts(env->prog_fd, &opts))
		die("BPF_PROG_TEST_RUN");
	if (ns)
		*ns = opts.duration;
	return (int)opts.retval;
}

struct frame frame_build(const struct frame_spec *s)
{
	return frame_build_part(s, 0);
}
