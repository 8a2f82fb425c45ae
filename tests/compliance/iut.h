/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The boundary between the compliance suite and an implementation under test (IUT): one QP of
 * the IUT, connected to a peer the suite plays. The suite hands it datagrams at a time, takes
 * the datagrams it sends, moves its clock, posts work requests, reads completions, its
 * registered memory and its counters. An adapter implements these operations for one kind of
 * implementation: iut_engine.c (lib/proto in virtual time, where time only moves when the
 * suite says, so a run is the same every time) and iut_remote.c (any implementation behind a
 * process that speaks agent.h's protocol: metaroced through agents/daemon.c, or yours).
 */
#ifndef METAROCE_TESTS_COMPLIANCE_IUT_H
#define METAROCE_TESTS_COMPLIANCE_IUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define IUT_MAX_DGRAM 9216u
#define IUT_MAX_PATHS 16u
#define IUT_MAX_PLANES 16u /* as the wire's MRC_MAX_PLANES (asserted where both are seen) */
#define IUT_ECN_UNKNOWN 0xffu

/*
 * The IUT's QP and the one region of its memory the peer may use. The script chooses every
 * value; an IUT that picks some itself (its QPN, its PSNs, its key, the region's address) makes
 * the QP with its own and writes them back in open(): the suite then names the script's
 * values by the IUT's on the wire (names.h), so the same script runs on either.
 */
struct iut_config {
	uint32_t qpn;	   /* the IUT's QP number */
	uint32_t peer_qpn; /* the suite's */
	uint32_t psn;	   /* the first PSN the IUT sends */
	uint32_t peer_psn; /* the first PSN the IUT expects */
	uint16_t max_payload;
	uint8_t n_paths;		/* one UDP source port each */
	uint8_t n_planes;		/* the paths in n_planes equal runs: plane 0's first */
	uint16_t sports[IUT_MAX_PATHS]; /* the IUT's source ports, path by path */
	bool at_rtr;			/* made at RTR: ready() takes it to RTS */
	uint32_t rq_depth;
	uint32_t mr_key;  /* the region's key, as the peer names it */
	uint64_t mr_addr; /* its first address, as the peer names it */
	uint32_t mr_len;
	bool mr_remote_write, mr_remote_read, mr_remote_atomic;
	bool qp_remote_write, qp_remote_read, qp_remote_atomic; /* the QP's qp_access_flags */
	uint8_t retry_cnt, rnr_retry;
	/*
	 * discovery: the suite plays the peer's node too (SPEC 12). The IUT knows the peer only
	 * by the address its QP names (peer_addr[0]) until the suite answers its DISCOVER, and
	 * the DISCOVER* it sends come to the suite. Without, the IUT knows the peer's node as it
	 * needs and the suite sees none. node_id and peer_node_id: the two nodes'.
	 */
	bool discovery;
	uint64_t node_id, peer_node_id;
	/* The adapter's network, written back by open(): the IUT's address and the peer's on
	 * each plane, a stranger's, outside the prefixes the IUT admits peers from, and
	 * a neighbour's, inside them but not this QP's peer. IPv6, an IPv4 address as
	 * ::ffff:a.b.c.d. */
	uint8_t addr[IUT_MAX_PLANES][16], peer_addr[IUT_MAX_PLANES][16], stranger_addr[16];
	uint8_t neighbour_addr[16];
	uint16_t port; /* the IUT's MetaRoCE port */
	/* auth: every packet of the QP carries AUTH and a tag (SPEC 14.6, header mode), the
	 * IUT's under key_from_iut, the suite's under key_to_iut (SipHash-2-4 keys, 16 bytes):
	 * the two directions' QP keys, which discovery would otherwise have derived. */
	bool auth;
	uint8_t key_to_iut[16], key_from_iut[16];
	/* auth with discovery: the two nodes trust each other by a cluster key, the script's 32
	 * bytes, and tag their DISCOVER* under it (SPEC 14.6); open() says the IUT node's public
	 * key. */
	uint8_t cluster_key[32], public_key[32];
	/* The receive capacity its rate hints share out, kbit/s (SPEC 8.2); 0: the IUT's own. */
	uint64_t rx_capacity_kbps;
	/* ud: the QP is an unreliable datagram QP (SPEC 4.8) holding qkey; its sends go to the
	 * suite's UD QP peer_qpn under peer_qkey, and its receives hold a 40-byte GRH first. */
	bool ud;
	uint32_t qkey, peer_qkey;
	/* mw: the peer's key (mr_key) names a type 2 memory window over the whole region, bound
	 * through the QP with the region's remote access (SPEC 4.9), not the region itself. */
	bool mw;
};

/* A datagram's UDP payload and what the network layers say of it. */
struct iut_dgram {
	uint8_t plane;
	uint16_t sport; /* the sender's UDP source port */
	/* the suite's end: where a datagram it delivers comes from, and where one the IUT sends
	 * goes (its address and port) */
	uint8_t addr[16];
	uint16_t dport;
	bool ce;	/* ECN CE in its IP header */
	/* what the IUT sent: its IP header's whole ECN field (0 Not-ECT, 1 ECT(1), 2 ECT(0),
	 * 3 CE), or IUT_ECN_UNKNOWN from an adapter that sees no IP header */
	uint8_t ecn;
	int8_t df; /* and its IPv4 Don't Fragment bit, or -1 where the adapter cannot tell */
	uint16_t len;
	uint8_t bytes[IUT_MAX_DGRAM];
};

enum iut_wr_kind {
	IUT_WR_WRITE,
	IUT_WR_WRITE_IMM,
	IUT_WR_SEND,
	IUT_WR_SEND_IMM,
	IUT_WR_READ,
	IUT_WR_RECV,
	IUT_WR_LOCAL_INV, /* IBV_WR_LOCAL_INV of the key in rkey */
	IUT_WR_KINDS
};

/* The kinds as scripts (post write ...) and the agent protocol (kind=write) name them. */
static const char *const iut_wr_kinds[IUT_WR_KINDS] __attribute__((unused)) = {
	[IUT_WR_WRITE] = "write", [IUT_WR_WRITE_IMM] = "write_imm", [IUT_WR_SEND] = "send",
	[IUT_WR_SEND_IMM] = "send_imm", [IUT_WR_READ] = "read", [IUT_WR_RECV] = "recv",
	[IUT_WR_LOCAL_INV] = "local_inv",
};

/* A work request on the IUT's memory: bytes [off, off + len) of its region. */
struct iut_wr {
	uint8_t kind; /* enum iut_wr_kind */
	uint64_t wr_id;
	uint32_t off, len;
	uint32_t rkey;	/* WRITE*, READ: the suite's key and address */
	uint64_t raddr;
	uint32_t imm;
	bool solicited; /* IBV_SEND_SOLICITED */
};

/* A completion, in verbs' terms: names as ibv_wc_status_str and the ibv_wc_opcode. */
struct iut_wc {
	uint64_t wr_id;
	bool recv; /* from the receive queue */
	char status[32]; /* "success", "wr_flush_err", "rem_access_err", ... */
	char opcode[32]; /* "send", "rdma_write", "rdma_read", "recv", "recv_rdma_with_imm" */
	uint32_t byte_len;
	uint32_t imm;
	bool with_imm;
	bool with_inv;	   /* IBV_WC_WITH_INV: a SEND_INV invalidated ... */
	uint32_t inv_rkey; /* ... this key (invalidated_rkey) */
};

struct iut_ops {
	const char *name;
	/*
	 * How long the IUT may take to act on what it was given, in real nanoseconds: 0 for one
	 * that acts at once in virtual time. An IUT with a clock of its own runs in real time: the
	 * suite waits for it, up to this long, before it finds an expected packet, completion,
	 * counter or state missing, and this long before it believes nothing more will come.
	 */
	uint64_t settle_ns;
	/* Its QP keeps its own configuration where the setup says nothing (its congestion window,
	 * READ limits, segment size, timers): scripts written to the engine's defaults
	 * ("needs engine-defaults") are skipped. */
	bool own_defaults;
	/* It is a whole node, as a daemon is: it matches each packet to a QP by the address it
	 * came from too, writes the IP headers, forms paths and payload sizes from what
	 * discovery learnt, derives PSNs and keys, has UD QPs and memory windows. A bare engine,
	 * given what its caller decided, is not: scripts that need one ("needs node") skip. */
	bool node;
	/* NULL, with why in err, when the IUT cannot make the QP; errno EOPNOTSUPP when it
	 * cannot make this one by design (the script is then skipped, with err as the reason).
	 * self: the ops it is called through (an adapter with several instances finds its own). */
	void *(*open)(const struct iut_ops *self, struct iut_config *cfg, uint64_t now_ns,
		      char *err, size_t errlen);
	void (*close)(void *iut);
	void (*deliver)(void *iut, const struct iut_dgram *d, uint64_t now_ns);
	/* The IUT's next datagram at now_ns, if it has one to send. */
	bool (*collect)(void *iut, struct iut_dgram *d, uint64_t now_ns);
	/* When the IUT next wants advance(); UINT64_MAX for never (and for an IUT that runs
	 * its own timers: advance() then waits until now_ns comes). */
	uint64_t (*deadline)(void *iut);
	void (*advance)(void *iut, uint64_t now_ns);
	/* 0, or -errno when the IUT refused the request */
	int (*post)(void *iut, const struct iut_wr *wr, uint64_t now_ns);
	bool (*poll)(void *iut, struct iut_wc *wc);
	/* The QP's state as verbs names it: "rts", "err", "closing", "closed"; NULL where the IUT
	 * cannot tell (the line is then reported unchecked, as a counter it does not keep). */
	const char *(*state)(void *iut);
	/* A counter by name (rx_dropped, tx_retransmits, ...); false for one it does not keep. */
	bool (*counter)(void *iut, const char *name, uint64_t *value);
	/* Bytes [off, off + len) of the region cfg->mr_* describes, as it holds now (false when
	 * they cannot be read); and writing into it, as the application does before it sends. */
	bool (*memory)(void *iut, uint32_t off, uint32_t len, uint8_t *out);
	void (*fill)(void *iut, uint32_t off, uint32_t len, uint8_t value);
	/*
	 * The operations of some scripts only, each NULL (or -EOPNOTSUPP) where the IUT has none:
	 * such a script is then skipped. drain: an operator drains a plane or restores it
	 * destroy: the application destroys the QP, which lingers (SPEC 11.4); ready:
	 * a QP made at RTR goes to RTS.
	 */
	int (*drain)(void *iut, uint8_t plane, bool drained, uint64_t now_ns);
	int (*destroy)(void *iut, uint64_t now_ns);
	int (*ready)(void *iut, uint64_t now_ns);
	/* register: the application registers one more region (and lets it go), as it did the
	 * first; *key its rkey. */
	int (*register_region)(void *iut, uint32_t *key, uint64_t now_ns);
	/* NULL, or why the adapter itself broke (an agent that died or answered nonsense): the
	 * script fails there with it. May be NULL for an adapter that cannot break so. */
	const char *(*fault)(void *iut);
};

extern const struct iut_ops iut_engine;
/* The implementation behind the agent program `command` runs (agent.h), started per run. */
const struct iut_ops *iut_remote(const char *command, char *err, size_t errlen);
/* The adapter a command line names: "engine", or "remote:COMMAND" (a new agent each call);
 * NULL with why in err. */
const struct iut_ops *iut_adapter(const char *spec, char *err, size_t errlen);

#endif
