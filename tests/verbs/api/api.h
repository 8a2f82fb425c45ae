/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * verbs_api_check's inside: the check macro, loopback QP pairs and the helpers every section
 * uses (sides.c), and the sections of its own files: regions and protection domains
 * (memory.c), atomics (atomics.c), shared receive queues (srq.c), UD QPs (ud.c), memory windows
 * (windows.c).
 */
#ifndef METAROCE_TESTS_VERBS_API_H
#define METAROCE_TESTS_VERBS_API_H

#include <errno.h>
#include <infiniband/verbs.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern int failures;
extern struct ibv_context *ctx;	/* the device, opened once */
extern union ibv_gid gid0;	/* its first GID: every loopback QP's peer address */

#define CHECK(cond, ...)                                                                      \
	do {                                                                                  \
		bool ok_ = (cond);                                                            \
		printf("%s  ", ok_ ? "ok  " : "FAIL");                                        \
		printf(__VA_ARGS__);                                                          \
		putchar('\n');                                                                \
		failures += !ok_;                                                             \
	} while (0)

struct side {
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_mr *local; /* a writer's local buffer, in its own PD (make_pair_with) */
};

void die(const char *what);
/* A side whose QP lives in pd (its own PD when pd is NULL), or in a PD of its own. */
void make_side_in(struct side *s, struct ibv_pd *pd);
void make_side(struct side *s);
/* INIT, RTR to dest (on this host), RTS: every remote access admitted. */
void connect_to(struct side *s, uint32_t dest);
bool poll_one_within(struct ibv_cq *cq, struct ibv_wc *wc, long ms);
bool poll_one(struct ibv_cq *cq, struct ibv_wc *wc);
/* One signaled WRITE from side s; its completion's status. */
enum ibv_wc_status write_to(struct side *s, struct ibv_mr *src, void *from, uint32_t len,
			    uint32_t rkey, uint64_t raddr, unsigned flags);
/* A writer and a target connected to each other, the target's QP in target_pd. */
void make_pair(struct side *w, struct side *t, struct ibv_pd *target_pd);
/* The same, with [local, local + len) registered for local write in the writer's PD as
 * w->local: a writer's PD is its own, so its buffers go and come with it. */
void make_pair_with(struct side *w, struct side *t, struct ibv_pd *target_pd, void *local,
		    size_t len);
/* Both QPs, their CQs, the writer's PD and its local buffer's registration go. */
void drop_pair(struct side *w, struct side *t);
/* Every byte of [p, p + n) is b. */
bool all(const uint8_t *p, size_t n, uint8_t b);

/* The sections. */
void rereg_matrix(void);
void pd_boundary(void);
void atomics(void);
void shared_receive_queue(void);
void unreliable_datagrams(void);
void memory_windows(void);

#endif
