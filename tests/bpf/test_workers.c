/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The udp backend's socket selector (bpf/metaroce_workers.bpf.c) in this kernel: three
 * receiving sockets in one SO_REUSEPORT group on the loopback of a network namespace of its
 * own, the program attached, and datagrams sent to the group: each must arrive at the socket
 * of the worker mrcd_shard_of_qpn names, the daemon's QPNs and runts at worker 0's, and a
 * worker whose socket left the group's array falls back to worker 0's.
 *
 *   test_workers build/bpf/metaroce_workers.bpf.o
 */
#include <arpa/inet.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <metaroce/wire.h>

#include "check.h"
#include "core/shard.h"

#define WORKERS 3u

static void die(const char *what)
{
	fprintf(stderr, "test_workers: %s: %s\n", what, strerror(errno));
	exit(1);
}

static void lo_up(void)
{
	struct ifreq ifr = { 0 };
	int sock = socket(AF_INET, SOCK_DGRAM, 0);

	strcpy(ifr.ifr_name, "lo");
	if (sock < 0 || ioctl(sock, SIOCGIFFLAGS, &ifr) ||
	    (ifr.ifr_flags |= IFF_UP, ioctl(sock, SIOCSIFFLAGS, &ifr)))
		die("bringing lo up");
	close(sock);
}

/* The program with cfg_workers set, loaded. */
static struct bpf_object *load(const char *path, uint32_t workers)
{
	struct bpf_object *obj = bpf_object__open_file(path, NULL);
	struct bpf_map *map;

	if (!obj)
		die(path);
	bpf_object__for_each_map(map, obj) {
		size_t size;
		const void *now;
		uint8_t rodata[64];

		if (!bpf_map__is_internal(map) || !strstr(bpf_map__name(map), ".rodata"))
			continue;
		now = bpf_map__initial_value(map, &size);
		if (!now || size < sizeof(workers) || size > sizeof(rodata))
			die("the program's read-only data");
		memcpy(rodata, now, size);
		memcpy(rodata, &workers, sizeof(workers)); /* cfg_workers, its only setting */
		if (bpf_map__set_initial_value(map, rodata, size))
			die("setting cfg_workers");
	}
	if (bpf_object__load(obj))
		die("loading the program (this kernel refuses it)");
	return obj;
}

static int bound_socket(uint16_t *port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(*port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(a);
	int one = 1, fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0);

	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one)) ||
	    bind(fd, (struct sockaddr *)&a, sizeof(a)) ||
	    getsockname(fd, (struct sockaddr *)&a, &len))
		die("a receiving socket");
	*port = ntohs(a.sin_port);
	return fd;
}

/* A datagram whose MetaRoCE header names qpn, `len` bytes; its byte 24 says which it is. */
static void send_to(int tx, uint16_t port, uint32_t qpn, size_t len, uint8_t tag)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	uint8_t buf[64] = { MRC_WIRE_VERSION, MRC_OP_ACK };

	buf[4] = (uint8_t)(qpn >> 24);
	buf[5] = (uint8_t)(qpn >> 16);
	buf[6] = (uint8_t)(qpn >> 8);
	buf[7] = (uint8_t)qpn;
	buf[len > 24 ? 24 : len - 1] = tag;
	if (sendto(tx, buf, len, 0, (struct sockaddr *)&a, sizeof(a)) != (ssize_t)len)
		die("sendto");
}

/* Which socket the tagged datagram reached: -1 none within a second, -2 another datagram. */
static int arrived_at(const int *rx, unsigned n, size_t len, uint8_t tag)
{
	struct pollfd p[WORKERS];

	for (unsigned i = 0; i < n; i++)
		p[i] = (struct pollfd){ .fd = rx[i], .events = POLLIN };
	if (poll(p, n, 1000) <= 0)
		return -1;
	for (unsigned i = 0; i < n; i++) {
		uint8_t buf[64];
		ssize_t got;

		if (!(p[i].revents & POLLIN))
			continue;
		got = recv(rx[i], buf, sizeof(buf), 0);
		return got == (ssize_t)len && buf[len > 24 ? 24 : len - 1] == tag ? (int)i : -2;
	}
	return -1;
}

int main(int argc, char **argv)
{
	struct bpf_object *obj;
	int rx[WORKERS], tx, prog, socks;
	uint16_t port = 0;
	uint8_t tag = 0;

	if (argc != 2) {
		fprintf(stderr, "usage: %s metaroce_workers.bpf.o\n", argv[0]);
		return 2;
	}
	if (unshare(CLONE_NEWNET))
		die("unshare(CLONE_NEWNET) (run as root)");
	lo_up();
	obj = load(argv[1], WORKERS);
	prog = bpf_program__fd(bpf_object__find_program_by_name(obj, "metaroce_select_worker"));
	socks = bpf_object__find_map_fd_by_name(obj, "mrc_worker_socks");
	if (prog < 0 || socks < 0)
		die("the program and its map");
	for (unsigned i = 0; i < WORKERS; i++) {
		uint32_t key = i;
		uint64_t fd;

		rx[i] = bound_socket(&port);
		if (i == 0 && setsockopt(rx[0], SOL_SOCKET, SO_ATTACH_REUSEPORT_EBPF, &prog,
					 sizeof(prog)))
			die("SO_ATTACH_REUSEPORT_EBPF");
		fd = (uint64_t)rx[i];
		if (bpf_map_update_elem(socks, &key, &fd, BPF_ANY))
			die("the worker's socket into the map");
	}
	tx = socket(AF_INET, SOCK_DGRAM, 0);
	if (tx < 0)
		die("the sending socket");

	/* every slot of a few generations, and the daemon's own QPNs */
	for (uint32_t qpn = 0; qpn < 3 * 4096 + 64; qpn += qpn < 4096 ? 1 : 97) {
		unsigned want = mrcd_shard_of_qpn(qpn, WORKERS);
		int got;

		send_to(tx, port, qpn, 32, ++tag);
		got = arrived_at(rx, WORKERS, 32, tag);
		check(got == (int)want, "QPN %u: at worker %d, not %u", qpn, got, want);
	}
	/* too short to name a QP: the control thread's, which refuses it */
	send_to(tx, port, 0, 5, ++tag);
	check(arrived_at(rx, WORKERS, 5, tag) == 0, "a 5-byte datagram: not at worker 0");
	/* a worker gone from the group's array: its datagrams to the control thread */
	{
		uint32_t key = 2, qpn = 4096 * 5 + 2; /* slot 2: worker 2 */

		if (bpf_map_delete_elem(socks, &key))
			die("taking worker 2's socket out");
		send_to(tx, port, qpn, 32, ++tag);
		check(arrived_at(rx, WORKERS, 32, tag) == 0,
		      "worker 2 gone: its QP's datagram not at worker 0");
	}
	printf("workers selector: %u checks, %u failed (%u workers, port %u)\n", checks, failures,
	       WORKERS, port);
	bpf_object__close(obj);
	return failures ? 1 : 0;
}
