/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The XDP program loaded into this kernel with the maps the daemon would fill, and frames
 * whose MetaRoCE part the real encoder writes: shared by the fixture test (test_xdp.c) and
 * the per-packet cost benchmark (bench/xdp_cost.c).
 */
#ifndef METAROCE_TESTS_XDP_ENV_H
#define METAROCE_TESTS_XDP_ENV_H

#include <stdbool.h>
#include <stdint.h>

#include <bpf/libbpf.h>
#include <metaroce/xdp.h>

#include "proto/auth.h"

#define XDP_ENV_OWNER 7
#define XDP_ENV_PAGES 4	/* pages of each region */

struct xdp_env {
	struct bpf_object *obj;
	int prog_fd, qps_fd, mrs_fd, pages_fd, outcomes_fd, planes_fd;
	int events_fd[2];	/* the event rings of workers 0 and 1 (a QP's `worker` picks) */
	struct mrc_xdp_qp *qps;	/* mrc_qps, mapped: changed in place, as the daemon does */
	struct mrc_xdp_wake *wake; /* mrc_wake, mapped, by worker: asleep is the daemon's (the
				    * test's) */
};

struct frame {
	uint8_t b[10000];
	uint32_t len;
	uint32_t mrc;		/* offset of the MetaRoCE packet */
	uint32_t mrc_len;
};

struct frame_spec {
	uint8_t opcode;
	uint32_t qpn, psn, rkey;
	uint64_t raddr;
	uint32_t payload;
	bool ipv6;
	uint16_t port;		/* 0: MetaRoCE's */
	uint8_t src_last;	/* 0: the usual source address; else its last byte */
	uint16_t flags;		/* MRC_F_* in the MetaRoCE header */
	bool ce;		/* the IP header's ECN field says CE */
	const struct mrc_auth_key *auth; /* tagged under it (SPEC 14.6); NULL: no trailer */
};

/* In a network namespace of its own (duplicates and redirects leave nowhere); exits on error. */
void xdp_env_open(struct xdp_env *env, const char *object, const char *who);
void xdp_env_close(struct xdp_env *env);

/* Plane 0 (where test runs arrive) has the address frames are sent to: IPv4 (the default,
 * 198.18.0.2) or IPv6 (2000::2). */
void xdp_env_set_plane_addr(const struct xdp_env *env, bool ipv6);

/* The QP in its slot, its peer on plane 0 (where test runs arrive) at this address. */
void xdp_env_set_qp(const struct xdp_env *env, uint32_t qpn, uint32_t base, uint32_t flags,
		    const uint8_t peer[16]);
struct mrc_xdp_qp *xdp_env_qp(const struct xdp_env *env, uint32_t qpn);
/* The QP (set already) authenticates: its packets must carry tags under key. */
void xdp_env_set_qp_auth(const struct xdp_env *env, uint32_t qpn, const struct mrc_auth_key *key);

/* A region of XDP_ENV_PAGES pages, its byte 0 (address addr) at byte `offset` of its page
 * map; returns the page map, mmapped for the caller to read. */
uint8_t *xdp_env_add_region(const struct xdp_env *env, uint32_t slot, uint32_t key,
			    uint32_t access, uint64_t addr, uint64_t len, uint32_t offset);

uint64_t xdp_env_outcome(const struct xdp_env *env, enum mrc_xdp_outcome o);

/* The byte at offset i of the payload of the packet with this PSN. */
uint8_t frame_payload_byte(uint32_t psn, uint32_t i);
struct frame frame_build(const struct frame_spec *s);
/* The same as the first packet of a message of msg_len bytes (0: the whole message). */
struct frame frame_build_part(const struct frame_spec *s, uint32_t msg_len);
/* The source address frame_build gives a frame of this spec, IPv4-mapped for IPv4. */
void frame_source(const struct frame_spec *s, uint8_t addr[16]);

/* One run of the program on the first len bytes of f; *ns (if given) the kernel's timing. */
int xdp_env_run(const struct xdp_env *env, const struct frame *f, uint32_t len, uint32_t repeat,
		uint32_t *ns);

#endif
