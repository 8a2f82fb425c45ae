/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * verbs_check's inside, shared by its files: the plan both peers follow, the options, the
 * TCP records, a side's verbs objects, a round, and what each file offers the others.
 * verbs_check.c parses options and runs the rounds; check/wire.c is the TCP exchange;
 * check/setup.c builds, connects and tears down a side, and makes and checks the patterns;
 * check/ops.c posts a round's operations and checks their completions.
 */
#ifndef METAROCE_TESTS_VERBS_CHECK_H
#define METAROCE_TESTS_VERBS_CHECK_H

#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <infiniband/verbs.h>

#define MAX_QPS		256
#define MAX_SIZES	32
#define MAX_MSG_SIZE	(1UL << 31)	/* the largest message RC allows */
/* Room for the unaligned start (1..7) and the guard byte after the longest message. */
#define BUF_SLACK	64
#define GUARD_BYTE	0xa5		/* around each destination region: must survive */
#define SOURCE_EDGE	0x5a		/* around each source region: must never arrive */
/* A QP never has more than one WR outstanding each way, nor a CQ more than one per QP. */
#define QUEUE_DEPTH	1
#define CQ_BATCH	16
#define RD_ATOMIC	16
#define BUF_ACCESS	(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | \
			 IBV_ACCESS_REMOTE_READ)
#define PLAN_MAGIC	0x56434b31u	/* "VCK1" */
#define SYNC_BYTE	0x53

enum op { OP_WRITE, OP_WRITE_IMM, OP_SEND, OP_SEND_IMM, OP_READ };
#define OP_COUNT	(OP_READ + 1)
#define ALL_OPS		((1u << OP_COUNT) - 1)

struct op_info {
	const char *name;
	enum ibv_wr_opcode wr_opcode;
	enum ibv_wc_opcode send_opcode;		/* the requester's completion */
	enum ibv_wc_opcode receive_opcode;	/* the responder's, when it consumes a receive */
	uint64_t send_ops_flag;
	bool remote_address;			/* names the peer's memory through its rkey */
	bool consumes_receive;
	bool has_imm;
};

/* What the client decides and the server follows, so both run the same sequence. */
struct plan {
	unsigned int num_qps;
	unsigned int ops;		/* bit (1 << enum op) per op */
	unsigned int num_sizes;
	size_t sizes[MAX_SIZES];
	unsigned long iterations;	/* 0: until killed */
};

struct options {
	struct plan plan;
	const char *host, *port, *ib_dev;
	uint8_t ib_port, gid_idx;
	int timeout_sec;
	bool extended, events, loopback, verbose;
};

/* The TCP link carries fixed-size records in network byte order. */
struct wire_plan {
	uint32_t magic, num_qps, ops, num_sizes;
	uint64_t iterations;
	uint64_t sizes[MAX_SIZES];
};

struct __attribute__((packed)) wire_qp {
	uint32_t qpn, psn, rkey;
	uint64_t addr;
	uint8_t gid[16];
};
_Static_assert(sizeof(struct wire_plan) == 280 && sizeof(struct wire_qp) == 36, "wire sizes");

/* What a peer needs to reach one QP and the buffer behind it. */
struct qp_info {
	uint32_t qpn, psn, rkey;
	uint64_t addr;
	union ibv_gid gid;
};

struct completion_queue {
	struct ibv_cq *cq;
	struct ibv_cq_ex *cq_ex;	/* with --extended; cq is then its ibv_cq */
};

struct side {
	const char *name;
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_comp_channel *channel;	/* with --events; both CQs report to it */
	struct completion_queue send_cq, recv_cq;
	union ibv_gid gid;
	uint32_t max_msg_sz;
	size_t buf_size;
	struct ibv_qp *qps[MAX_QPS];
	struct ibv_qp_ex *qpxs[MAX_QPS];
	struct ibv_mr *mrs[MAX_QPS];
	uint8_t *bufs[MAX_QPS];
	uint64_t buf_addr[MAX_QPS];		/* bufs[q] as addressed through its MR */
	uint32_t psns[MAX_QPS];
	uint64_t recvs_posted[MAX_QPS];
	uint64_t recv_wr_id[MAX_QPS];		/* of the one receive posted on each QP */
	size_t recv_offset[MAX_QPS];
	struct qp_info remote[MAX_QPS];
};

struct session {
	int fd;			/* TCP link to the peer; -1 with --loopback */
	struct side *client;	/* the requester; NULL when the peer is the client */
	struct side *server;	/* the responder; NULL when the peer is the server */
	uint64_t rounds, operations, bytes_verified;
};

struct round {
	enum op op;
	bool reverse;		/* the server is the requester */
	unsigned long iteration;
	size_t size;
	uint64_t seq;		/* rounds before this one; both peers count alike */
};


extern struct options opt;
extern const struct op_info op_table[OP_COUNT];

/* verbs_check.c: failing, time */
void __attribute__((noreturn, format(printf, 1, 2))) die(const char *fmt, ...);
void __attribute__((noreturn, format(printf, 3, 4)))
round_fail(const struct round *rd, unsigned int q, const char *fmt, ...);
const char *verbs_strerror(int ret);
/* A round's operation as messages name it. */
const char *op_label(const struct round *rd);
double now_seconds(void);

/* wire.c: the TCP link and its records */
void exchange(const struct session *ss, const void *out, void *in, size_t len,
	      const char *what);
void sync_peer(const struct session *ss, const char *what);
int tcp_accept(const char *port);
int tcp_connect(const char *host, const char *port);
void send_plan(const struct session *ss);
void receive_plan(const struct session *ss);
struct qp_info local_qp_info(const struct side *s, unsigned int q);
void exchange_qp_info(const struct session *ss, struct side *s);

/* setup.c: a side's verbs objects; the patterns */
void side_open(struct side *s, struct ibv_device *dev, const char *name);
uint64_t make_wr_id(uint64_t seq, unsigned int q, bool receive);
void post_receive(struct side *s, unsigned int q);
void side_create(struct side *s);
void connect_qp(struct side *s, unsigned int q);
void side_destroy(struct side *s);
uint64_t pattern_seed(const struct round *rd, unsigned int q);
void prepare(uint8_t *msg, size_t size, uint64_t seed, bool destination);
void verify(struct session *ss, const struct side *s, const struct round *rd, unsigned int q,
	    size_t offset);

/* ops.c: one operation of one round, every QP, checked */
void run_op(struct session *ss, unsigned long iteration, enum op op, bool reverse);

#endif /* METAROCE_TESTS_VERBS_CHECK_H */
