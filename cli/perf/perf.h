/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * metaroce-perf's inside, shared by its files: the options, the set-up exchange's wire
 * structures, the run's state, and what each file offers the others. metaroce-perf.c parses
 * options and runs a test; perf/setup.c builds and connects the verbs resources over the TCP
 * set-up channel, fills and checks data patterns, posts work and prints progress;
 * perf/bw.c runs the bandwidth tests and perf/lat.c the latency ones.
 */
#ifndef METAROCE_CLI_PERF_H
#define METAROCE_CLI_PERF_H

#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
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
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <infiniband/verbs.h>

#ifndef METAROCE_VERSION
#define METAROCE_VERSION "unknown"
#endif

#define HELLO_MAGIC	0x4d525046u	/* "MRPF" */
#define DONE_MAGIC	0x4d52444eu	/* "MRDN" */
#define REPORT_MAGIC	0x4d525250u	/* "MRRP" */
#define WIRE_VERSION	1
#define MAX_QPS		4096
#define MAX_DEPTH	1024
#define MAX_MSG_SIZE	(1ull << 30)
#define MAX_BUFFER	(4ull << 30)	/* per side: qps x depth x size under --verify */
#define CQ_BATCH	32
#define STALL_SECONDS	10.0		/* no completion for this long: the run has failed */
#define BUF_ACCESS	(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | \
			 IBV_ACCESS_REMOTE_READ)
/* The immediate of a write round's closing SEND: round number and message count. */
#define ROUND_IMM(round, count)	((uint32_t)(((round) & 0xffff) << 16 | (count)))
#define IMM_STOP	0xffffffffu	/* latency: the client's last message */
/* wr_id: what the work request was, and for which QP and buffer slot. */
#define WRID(kind, qp, slot)	((uint64_t)(kind) << 56 | (uint64_t)(qp) << 24 | (slot))
#define WRID_KIND(id)	((unsigned int)((id) >> 56))
#define WRID_QP(id)	((unsigned int)(((id) >> 24) & 0xffffffu))
#define WRID_SLOT(id)	((unsigned int)((id) & 0xffffffu))

enum test { TEST_WRITE, TEST_READ, TEST_SEND };
enum mode { MODE_BW, MODE_LAT };
enum wr_kind { WR_DATA = 1, WR_ROUND, WR_RECV };

struct options {
	enum test test;
	enum mode mode;
	uint64_t size;
	unsigned int qps;
	unsigned int depth;
	double duration;
	uint64_t iterations;
	bool verify;
	bool events;		/* sleep on a completion channel instead of spinning */
	bool json;
	int progress;		/* -1: when stderr is a terminal */
	double interval;
	const char *device;
	int gid_index;
	int ib_port;
	const char *port;
	const char *host;	/* NULL: server */
	double timeout;
};

/* Both peers send this first; the server answers with the values it accepted. */
struct wire_hello {
	uint32_t magic;
	uint32_t version;
	uint32_t test;
	uint32_t mode;
	uint32_t qps;
	uint32_t depth;
	uint32_t verify;
	uint32_t mtu;
	uint64_t size;
	uint64_t iterations;	/* latency: per run; bandwidth: per QP; 0 = by duration */
};

struct wire_qp {
	uint32_t qpn;
	uint32_t psn;
	uint32_t rkey;
	uint32_t reserved;
	uint64_t addr;		/* this QP's region in the peer's buffer */
	uint8_t gid[16];
};

struct wire_done {
	uint32_t magic;
	uint32_t qps;
	/* followed by one big-endian uint64_t per QP: messages the client sent */
};

struct wire_report {
	uint32_t magic;
	uint32_t errors;
	uint64_t received;
	uint64_t verified;
};

/* Per QP, on either side. */
struct qp_state {
	struct ibv_qp *qp;
	uint32_t psn;
	struct wire_qp remote;
	uint64_t posted;		/* data messages posted */
	uint64_t completed;		/* data messages completed */
	uint64_t received;		/* receives completed (server: data; client: replies) */
	uint64_t expected;		/* server, send test: what the client says it sent */
	unsigned int outstanding;	/* send-queue work requests in flight */
	/* write --verify rounds */
	unsigned int round;
	unsigned int in_round;		/* writes posted in this round */
	bool round_open;		/* closing SEND posted, answer not yet here */
	bool round_send_done;		/* closing SEND completed */
	bool round_answered;
};

struct perf {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq **cqs;		/* as many as the device's CQ size needs */
	unsigned int num_cqs;
	unsigned int qps_per_cq;
	struct ibv_comp_channel *channel;	/* --events */
	bool armed;			/* every CQ asked for an event since the last wake-up */
	struct ibv_mr *mr;
	uint8_t *buf;
	size_t buf_len;
	size_t qp_stride;		/* bytes between QPs' regions (0: all share one) */
	unsigned int slots;		/* message buffers per region */
	struct qp_state *qs;
	union ibv_gid gid;
	enum ibv_mtu mtu;
	int fd;				/* TCP to the peer */
	bool client;
	uint64_t errors;
	uint64_t verified;
	double *lat;			/* latency samples, microseconds */
	size_t lat_len, lat_cap;
	volatile sig_atomic_t interrupted;
};

extern struct options opt;
extern struct perf perf;
extern const char *const test_names[];
extern const char *const mode_names[];

/* Salts keep the two directions and the tests' kinds of data apart. */
enum { SALT_CLIENT = 0x1c11e, SALT_SERVER = 0x5e77e };
/* Latency tests send from one slot and receive into the other, on both sides. */
enum { LAT_OUT = 0, LAT_IN = 1 };

/* A progress line every interval (progress_tick, progress_end). */
struct progress {
	double start, last, next;
	uint64_t last_bytes, last_msgs;
	size_t last_lat;
};

/* metaroce-perf.c: failing, time */
const char *verbs_strerror(int ret);
void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
double now_seconds(void);
double cpu_seconds(void);

/* setup.c: patterns, the set-up channel, resources, posting, progress */
uint8_t *slot_ptr(unsigned int q, unsigned int slot);
uint64_t pattern_seed(unsigned int qp, uint64_t seq, uint32_t salt);
void pattern_fill(uint8_t *p, size_t len, uint64_t seed);
void check_data(unsigned int q, unsigned int slot, uint64_t seq, uint32_t salt,
		const char *what);
void write_full(const void *buf, size_t len, const char *what);
void read_full(void *buf, size_t len, const char *what);
void connect_qps(void);
void destroy_resources(void);
void sync_peer(const char *what);
void set_up(void);
void post_send(unsigned int q, enum ibv_wr_opcode opcode, uint64_t wr_id, unsigned int slot,
	       unsigned int remote_slot, bool with_data, uint32_t imm);
void post_recv(unsigned int q, unsigned int slot, bool with_data);
void completion_failed(const struct ibv_wc *wc);
void progress_tick(struct progress *p, double now, uint64_t bytes, uint64_t msgs);
void progress_end(void);

/* bw.c: the bandwidth tests, and waiting for completions */
void idle(int timeout_ms);
void report_line(const char *role, double secs, uint64_t msgs, double cpu,
		 const struct wire_report *peer);
void client_bw(void);
void server_bw(void);

/* lat.c: the latency tests */
void client_lat(void);
void server_lat(void);

#endif /* METAROCE_CLI_PERF_H */
