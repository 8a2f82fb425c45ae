/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The testbed's link impairment program (testbed/bpf/impair.bpf.c), loaded into this kernel
 * and run with BPF_PROG_TEST_RUN on packets built here: one declarative fixture per path
 * through it (description, settings, packet, expected verdict, counters and bytes out), then
 * the statistical checks: measured loss within +-10% of the setting over >= 10^5 packets,
 * and burst loss with the mean burst length Gilbert-Elliott predicts.
 *
 * It runs in a network namespace of its own, so a duplicate it sends leaves nowhere.
 *
 *	test_impair IMPAIR_BPF_OBJECT
 */
#include <arpa/inet.h>
#include <errno.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/pkt_cls.h>
#include <linux/udp.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sched.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "testbed/bpf/impair.h"
#include "tests/bpf/check.h"

static int prog_fd, config_fd, ports_fd;

/* --- packets ------------------------------------------------------------------------------ */

enum kind { PKT_UDP4, PKT_TCP4, PKT_UDP6, PKT_ICMP4, PKT_ARP, PKT_RUNT };

struct packet {
	uint8_t b[256];
	uint32_t len;
	uint32_t l3, l4;
};

static uint16_t ip_checksum(const void *hdr, size_t len)
{
	const uint8_t *p = hdr;
	uint32_t sum = 0;

	for (size_t i = 0; i + 1 < len; i += 2)
		sum += (uint32_t)(p[i] << 8 | p[i + 1]);
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

static struct packet build(enum kind k, uint8_t ecn)
{
	struct packet p = { .l3 = sizeof(struct ethhdr) };
	struct ethhdr *eth = (void *)p.b;
	const uint32_t payload = 100;

	memset(eth->h_dest, 0x02, ETH_ALEN);
	memset(eth->h_source, 0x04, ETH_ALEN);
	if (k == PKT_RUNT) {	/* says IPv4, with a header length shorter than any */
		eth->h_proto = htons(ETH_P_IP);
		p.b[p.l3] = 4 << 4 | 4;
		p.len = sizeof(*eth) + 40;
		return p;
	}
	if (k == PKT_ARP) {
		eth->h_proto = htons(ETH_P_ARP);
		p.len = sizeof(*eth) + 28;
		return p;
	}
	if (k == PKT_UDP6) {
		struct ipv6hdr *ip6 = (void *)(p.b + p.l3);
		uint32_t first = htonl(6u << 28 | (uint32_t)ecn << 20);

		eth->h_proto = htons(ETH_P_IPV6);
		memcpy(ip6, &first, 4);
		ip6->nexthdr = IPPROTO_UDP;
		ip6->hop_limit = 64;
		ip6->payload_len = htons(sizeof(struct udphdr) + payload);
		ip6->saddr.s6_addr[0] = 0x20;
		ip6->daddr.s6_addr[0] = 0x20;
		p.l4 = p.l3 + sizeof(*ip6);
	} else {
		struct iphdr *ip = (void *)(p.b + p.l3);

		eth->h_proto = htons(ETH_P_IP);
		ip->version = 4;
		ip->ihl = 5;
		ip->tos = ecn;
		ip->ttl = 64;
		ip->protocol = k == PKT_UDP4 ? IPPROTO_UDP : k == PKT_TCP4 ? IPPROTO_TCP
									: IPPROTO_ICMP;
		ip->saddr = htonl(0xc6120001);	/* 198.18.0.1 */
		ip->daddr = htonl(0xc6120002);
		p.l4 = p.l3 + sizeof(*ip);
		ip->tot_len = htons((uint16_t)(sizeof(*ip) + 20 + payload));
		ip->check = htons(ip_checksum(ip, sizeof(*ip)));
	}
	if (k == PKT_UDP4 || k == PKT_UDP6) {
		struct udphdr *udp = (void *)(p.b + p.l4);

		udp->source = htons(49152);
		udp->dest = htons(4791);
		udp->len = htons(sizeof(*udp) + payload);
		udp->check = htons(0x1234);
		p.len = p.l4 + (uint32_t)sizeof(*udp) + payload;
	} else {
		p.b[p.l4 + 12] = 5 << 4;	/* TCP data offset: 20 bytes */
		p.len = p.l4 + 20 + payload;
	}
	for (uint32_t i = p.len - payload; i < p.len; i++)
		p.b[i] = (uint8_t)i;
	return p;
}

/* --- running ------------------------------------------------------------------------------ */

static void set_config(uint32_t key, const struct impair_config *c)
{
	if (bpf_map_update_elem(config_fd, &key, c, BPF_ANY))
		fprintf(stderr, "config update: %s\n", strerror(errno)), exit(1);
}

static void reset_maps(void)
{
	uint32_t key, next;

	while (!bpf_map_get_next_key(config_fd, NULL, &next))
		bpf_map_delete_elem(config_fd, &next);
	while (!bpf_map_get_next_key(ports_fd, NULL, &next))
		bpf_map_delete_elem(ports_fd, &next);
	(void)key;
}

static struct impair_stats port_stats(void)
{
	struct impair_port port = { 0 };
	uint32_t key = 1;	/* the loopback device test runs are attributed to */

	bpf_map_lookup_elem(ports_fd, &key, &port);
	return port.stats;
}

static int run(const struct packet *in, uint32_t mark, uint32_t repeat, struct packet *out)
{
	struct __sk_buff ctx = { .mark = mark, .ifindex = 1 };
	LIBBPF_OPTS(bpf_test_run_opts, opts, .data_in = in->b, .data_size_in = in->len,
		    .data_out = out ? out->b : NULL, .data_size_out = out ? sizeof(out->b) : 0,
		    .ctx_in = &ctx, .ctx_size_in = sizeof(ctx), .repeat = repeat);

	if (bpf_prog_test_run_opts(prog_fd, &opts))
		fprintf(stderr, "BPF_PROG_TEST_RUN: %s\n", strerror(errno)), exit(1);
	if (out)
		out->len = opts.data_size_out;
	return (int)opts.retval;
}

/* --- fixtures ------------------------------------------------------------------------------ */

enum expect_bytes { SAME, CE_SET, ONE_BIT_FLIPPED };

struct fixture {
	const char *what;
	bool configured;
	struct impair_config config;
	enum kind kind;
	uint8_t ecn;
	uint32_t mark;
	int verdict;
	enum expect_bytes bytes;
	struct impair_stats stats;	/* exactly these counters after one run */
};

#define ECT0 2
static const struct fixture fixtures[] = {
	{ "no settings: everything passes untouched", false, {}, PKT_UDP4, 0, 0,
	  TC_ACT_OK, SAME, {} },
	{ "settings all zero: counted, passed untouched", true, {}, PKT_UDP4, 0, 0,
	  TC_ACT_OK, SAME, { .packets = 1, .bytes = 142 } },
	{ "blackhole drops UDP", true, { .blackhole = 1 }, PKT_UDP4, 0, 0,
	  TC_ACT_SHOT, SAME, { .packets = 1, .bytes = 142, .lost_blackhole = 1 } },
	{ "blackhole drops TCP", true, { .blackhole = 1 }, PKT_TCP4, 0, 0,
	  TC_ACT_SHOT, SAME, { .packets = 1, .bytes = 154, .lost_blackhole = 1 } },
	{ "blackhole drops IPv6 UDP", true, { .blackhole = 1 }, PKT_UDP6, 0, 0,
	  TC_ACT_SHOT, SAME, { .packets = 1, .bytes = 162, .lost_blackhole = 1 } },
	{ "blackhole spares ARP", true, { .blackhole = 1 }, PKT_ARP, 0, 0,
	  TC_ACT_OK, SAME, { .passed_other = 1 } },
	{ "blackhole spares ICMP", true, { .blackhole = 1 }, PKT_ICMP4, 0, 0,
	  TC_ACT_OK, SAME, { .passed_other = 1 } },
	{ "an IPv4 header shorter than 20 bytes passes as other traffic", true, { .loss_ppm = IMPAIR_PPM }, PKT_RUNT, 0,
	  0, TC_ACT_OK, SAME, { .passed_other = 1 } },
	{ "loss 100% drops", true, { .loss_ppm = IMPAIR_PPM }, PKT_UDP4, 0, 0,
	  TC_ACT_SHOT, SAME, { .packets = 1, .bytes = 142, .lost_random = 1 } },
	{ "burst loss in a certain bad state drops", true,
	  { .burst_enter_ppm = IMPAIR_PPM, .burst_leave_ppm = 0,
	    .burst_loss_ppm = IMPAIR_PPM }, PKT_UDP4, 0, 0,
	  TC_ACT_SHOT, SAME, { .packets = 1, .bytes = 142, .lost_burst = 1 } },
	{ "our own duplicate passes uncounted", true, { .blackhole = 1 }, PKT_UDP4, 0,
	  IMPAIR_DUP_MARK, TC_ACT_OK, SAME, {} },
	{ "ECN: ECT(0) over the threshold is marked CE, checksum fixed", true,
	  { .ecn_rate_bps = 1000, .ecn_kmin_bytes = 0, .ecn_kmax_bytes = 0,
	    .ecn_pmax_ppm = IMPAIR_PPM }, PKT_UDP4, ECT0, 0, TC_ACT_OK, CE_SET,
	  { .packets = 1, .bytes = 142, .ce_marked = 1 } },
	{ "ECN: IPv6 ECT(0) is marked CE", true,
	  { .ecn_rate_bps = 1000, .ecn_pmax_ppm = IMPAIR_PPM }, PKT_UDP6, ECT0, 0, TC_ACT_OK,
	  CE_SET, { .packets = 1, .bytes = 162, .ce_marked = 1 } },
	{ "ECN: not ECT is left alone and counted", true,
	  { .ecn_rate_bps = 1000, .ecn_pmax_ppm = IMPAIR_PPM }, PKT_UDP4, 0, 0, TC_ACT_OK,
	  SAME, { .packets = 1, .bytes = 142, .over_kmin_not_ect = 1 } },
	{ "ECN: below kmin nothing is marked", true,
	  { .ecn_rate_bps = 1000, .ecn_kmin_bytes = 100000, .ecn_kmax_bytes = 200000,
	    .ecn_pmax_ppm = IMPAIR_PPM }, PKT_UDP4, ECT0, 0, TC_ACT_OK, SAME,
	  { .packets = 1, .bytes = 142 } },
	{ "corruption flips one payload bit and clears the IPv4 UDP checksum", true,
	  { .corrupt_ppm = IMPAIR_PPM }, PKT_UDP4, 0, 0, TC_ACT_OK, ONE_BIT_FLIPPED,
	  { .packets = 1, .bytes = 142, .corrupted = 1 } },
	{ "corruption of TCP flips one payload bit", true,
	  { .corrupt_ppm = IMPAIR_PPM }, PKT_TCP4, 0, 0, TC_ACT_OK, ONE_BIT_FLIPPED,
	  { .packets = 1, .bytes = 154, .corrupted = 1 } },
	{ "duplication sends a clone and passes the original", true,
	  { .duplicate_ppm = IMPAIR_PPM }, PKT_UDP4, 0, 0, TC_ACT_OK, SAME,
	  { .packets = 1, .bytes = 142, .duplicated = 1 } },
};

static void check_bytes(const struct fixture *f, const struct packet *in,
			const struct packet *out)
{
	unsigned differing_bits = 0, first_diff = 0;

	check(out->len == in->len, "%s: %u bytes out of %u", f->what, out->len, in->len);
	for (uint32_t i = 0; i < in->len && i < out->len; i++) {
		uint8_t x = in->b[i] ^ out->b[i];

		if (x && !differing_bits)
			first_diff = i;
		differing_bits += (unsigned)__builtin_popcount(x);
	}
	switch (f->bytes) {
	case SAME:
		check(!differing_bits, "%s: %u bits changed", f->what, differing_bits);
		break;
	case CE_SET:
		if (f->kind == PKT_UDP6) {
			uint32_t first;

			memcpy(&first, out->b + in->l3, 4);
			check((ntohl(first) >> 20 & 3) == 3, "%s: traffic class ECN not CE", f->what);
			check(!memcmp(in->b + in->l3 + 4, out->b + in->l3 + 4, in->len - in->l3 - 4),
			      "%s: more than the ECN field changed", f->what);
		} else {
			check((out->b[in->l3 + 1] & 3) == 3, "%s: TOS ECN not CE", f->what);
			check(ip_checksum(out->b + in->l3, 20) == 0,
			      "%s: IPv4 header checksum wrong after marking", f->what);
		}
		break;
	case ONE_BIT_FLIPPED: {
		uint32_t payload = f->kind == PKT_TCP4 ? in->l4 + 20 : in->l4 + 8;
		unsigned flipped = 0;

		for (uint32_t i = payload; i < in->len; i++)
			flipped += (unsigned)__builtin_popcount(in->b[i] ^ out->b[i]);
		check(flipped == 1, "%s: %u payload bits flipped", f->what, flipped);
		check(!memcmp(in->b, out->b, in->l4), "%s: a header changed (first at %u)",
		      f->what, first_diff);
		if (f->kind == PKT_UDP4)
			check(!out->b[in->l4 + 6] && !out->b[in->l4 + 7],
			      "%s: UDP checksum not cleared", f->what);
		break;
	}
	}
}

static void run_fixture(const struct fixture *f)
{
	struct packet in = build(f->kind, f->ecn), out;
	unsigned failed_before = failures;
	struct impair_stats s;
	int verdict;

	reset_maps();
	if (f->configured)
		set_config(0, &f->config);
	verdict = run(&in, f->mark, 1, &out);
	check(verdict == f->verdict, "%s: verdict %d, %d expected", f->what, verdict, f->verdict);
	if (verdict != TC_ACT_SHOT)
		check_bytes(f, &in, &out);
	s = port_stats();
	check(!memcmp(&s, &f->stats, sizeof(s)),
	      "%s: counters packets %llu bytes %llu random %llu burst %llu blackhole %llu "
	      "corrupted %llu duplicated %llu ce %llu not-ect %llu other %llu", f->what,
	      (unsigned long long)s.packets, (unsigned long long)s.bytes,
	      (unsigned long long)s.lost_random, (unsigned long long)s.lost_burst,
	      (unsigned long long)s.lost_blackhole, (unsigned long long)s.corrupted,
	      (unsigned long long)s.duplicated, (unsigned long long)s.ce_marked,
	      (unsigned long long)s.over_kmin_not_ect, (unsigned long long)s.passed_other);
	if (failures == failed_before)
		printf("ok   %s\n", f->what);
}

/* A port's own settings win over the namespace-wide ones (key 0). */
static void per_port_settings(void)
{
	struct impair_config hole = { .blackhole = 1 }, clean = { 0 };
	struct packet in = build(PKT_UDP4, 0);
	unsigned failed_before = failures;

	reset_maps();
	set_config(0, &hole);
	set_config(1, &clean);
	check(run(&in, 0, 1, NULL) == TC_ACT_OK, "per-port settings: key 0 won over the port's");
	if (failures == failed_before)
		printf("ok   a port's own settings win over the default\n");
}

/* Measured over n packets, the loss rate must be within 10% of the setting. */
static void loss_rate(uint32_t ppm, uint32_t n)
{
	struct impair_config c = { .loss_ppm = ppm };
	struct packet in = build(PKT_UDP4, 0);
	struct impair_stats s;
	double want = ppm / 1e6, got;
	unsigned failed_before = failures;

	reset_maps();
	set_config(0, &c);
	run(&in, 0, n, NULL);
	s = port_stats();
	got = (double)s.lost_random / (double)s.packets;
	check(s.packets == n, "loss %.1f%%: %llu packets seen of %u", want * 100,
	      (unsigned long long)s.packets, n);
	check(got > want * 0.9 && got < want * 1.1, "loss %.2f%% measured %.3f%% over %u packets",
	      want * 100, got * 100, n);
	if (failures == failed_before)
		printf("ok   random loss %.1f%%: measured %.3f%% over %u packets\n", want * 100,
		       got * 100, n);
}

/*
 * Gilbert-Elliott with certain loss in the bad state: the long-run loss is
 * enter / (enter + leave) and a burst lasts 1 / leave packets on average.
 */
static void burst_loss(void)
{
	const uint32_t enter = 10000, leave = 100000, n = 500000;
	struct impair_config c = { .burst_enter_ppm = enter, .burst_leave_ppm = leave,
				   .burst_loss_ppm = IMPAIR_PPM };
	struct packet in = build(PKT_UDP4, 0);
	unsigned lost = 0, bursts = 0, failed_before = failures;
	bool prev = false;
	double want_rate = (double)enter / (enter + leave), want_len = 1e6 / leave;
	double rate, len;

	reset_maps();
	set_config(0, &c);
	for (uint32_t i = 0; i < n; i++) {
		bool drop = run(&in, 0, 1, NULL) == TC_ACT_SHOT;

		lost += drop;
		bursts += drop && !prev;
		prev = drop;
	}
	rate = (double)lost / n;
	len = bursts ? (double)lost / bursts : 0;
	check(rate > want_rate * 0.9 && rate < want_rate * 1.1,
	      "burst loss: %.3f%% measured, %.3f%% expected", rate * 100, want_rate * 100);
	check(len > want_len * 0.85 && len < want_len * 1.15,
	      "burst loss: bursts of %.2f packets measured, %.2f expected", len, want_len);
	if (failures == failed_before)
		printf("ok   burst loss: %.2f%% in bursts of %.2f packets (expected %.2f%%, %.2f) "
		       "over %u\n", rate * 100, len, want_rate * 100, want_len, n);
}

int main(int argc, char **argv)
{
	struct bpf_object *obj;
	struct bpf_program *prog;
	struct ifreq ifr = { 0 };
	int sock;

	if (argc != 2) {
		fprintf(stderr, "usage: test_impair IMPAIR_BPF_OBJECT\n");
		return 2;
	}
	if (unshare(CLONE_NEWNET)) {
		fprintf(stderr, "unshare(CLONE_NEWNET): %s (run as root)\n", strerror(errno));
		return 1;
	}
	/* The loopback of this namespace is where duplicates go: up, so they can. */
	sock = socket(AF_INET, SOCK_DGRAM, 0);
	strcpy(ifr.ifr_name, "lo");
	if (sock < 0 || ioctl(sock, SIOCGIFFLAGS, &ifr) ||
	    (ifr.ifr_flags |= IFF_UP, ioctl(sock, SIOCSIFFLAGS, &ifr)))
		fprintf(stderr, "cannot bring lo up: %s\n", strerror(errno)), exit(1);
	close(sock);
	obj = bpf_object__open_file(argv[1], NULL);
	if (!obj || bpf_object__load(obj)) {
		fprintf(stderr, "cannot load %s: %s\n", argv[1], strerror(errno));
		return 1;
	}
	prog = bpf_object__find_program_by_name(obj, "impair");
	prog_fd = bpf_program__fd(prog);
	config_fd = bpf_object__find_map_fd_by_name(obj, "impair_config");
	ports_fd = bpf_object__find_map_fd_by_name(obj, "impair_ports");
	if (prog_fd < 0 || config_fd < 0 || ports_fd < 0) {
		fprintf(stderr, "%s lacks the program or its maps\n", argv[1]);
		return 1;
	}
	for (size_t i = 0; i < sizeof(fixtures) / sizeof(fixtures[0]); i++)
		run_fixture(&fixtures[i]);
	per_port_settings();
	loss_rate(10000, 200000);
	loss_rate(100000, 100000);
	burst_loss();
	bpf_object__close(obj);
	printf("impair: %u checks, %u failed\n", checks, failures);
	return failures ? 1 : 0;
}
