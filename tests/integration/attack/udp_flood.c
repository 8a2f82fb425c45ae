/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * A UDP flood at what one core can send: datagrams of random bytes, some shaped like
 * MetaRoCE packets (the version byte right, the rest noise), to ADDR:PORT for SECONDS, in
 * batches of 64 per sendmmsg. The attacker of "a UDP flood at line rate" (issue 20): the
 * daemon under it must keep serving its control socket and its QPs.
 *
 *   udp_flood ADDR PORT SECONDS      prints how many datagrams it sent
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <metaroce/wire.h>

#define BATCH 64
#define SIZE 1024

static uint64_t xorshift(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static double seconds_now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + t.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	static uint8_t bufs[BATCH][SIZE];
	struct mmsghdr msgs[BATCH];
	struct iovec iov[BATCH];
	struct sockaddr_in to = { .sin_family = AF_INET };
	uint64_t seed = 0x9e3779b97f4a7c15ull, sent = 0;
	double until;
	int fd, n;

	if (argc != 4 || inet_pton(AF_INET, argv[1], &to.sin_addr) != 1) {
		fprintf(stderr, "usage: udp_flood ADDR PORT SECONDS\n");
		return 2;
	}
	to.sin_port = htons((uint16_t)atoi(argv[2]));
	until = seconds_now() + atof(argv[3]);
	fd = socket(AF_INET, SOCK_DGRAM, 0);
	if (fd < 0) {
		perror("udp_flood: socket");
		return 1;
	}
	memset(msgs, 0, sizeof(msgs));
	for (unsigned i = 0; i < BATCH; i++) {
		iov[i] = (struct iovec){ bufs[i], 64 + i * (SIZE - 64) / BATCH };
		msgs[i].msg_hdr = (struct msghdr){ .msg_name = &to, .msg_namelen = sizeof(to),
						   .msg_iov = &iov[i], .msg_iovlen = 1 };
	}
	while (seconds_now() < until) {
		for (unsigned i = 0; i < BATCH; i++) {
			for (unsigned k = 0; k < 64; k += 8) {
				uint64_t r = xorshift(&seed);

				memcpy(bufs[i] + k, &r, 8);
			}
			if (i % 2)
				bufs[i][0] = MRC_WIRE_VERSION; /* past the first check */
		}
		n = sendmmsg(fd, msgs, BATCH, 0);

		if (n < 0 && errno != ENOBUFS && errno != EAGAIN && errno != ECONNREFUSED) {
			perror("udp_flood: sendmmsg");
			return 1;
		}
		sent += n > 0 ? (unsigned)n : 0;
	}
	printf("%llu\n", (unsigned long long)sent);
	return 0;
}
