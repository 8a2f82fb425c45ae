/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Writes fuzzing seed corpora: `gen_corpus codec DIR` uses the real encoder, so the seeds
 * follow the wire format as it changes (each seed is a mode byte, odd: the harness reseals the
 * checksum, then one valid packet of every opcode); `gen_corpus conn DIR` writes scripts.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <metaroce/ctl.h>

#include "proto/bytes.h"
#include "proto/checksum.h"
#include "proto/cm.h"
#include "proto/codec.h"

static uint8_t out[1 + 9000];

/* DIR/NAME holding exactly len bytes of data; -1 (said on stderr) when it cannot be written. */
static int write_file(const char *dir, const char *name, const void *data, size_t len)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "wb");
	if (!f || (len && fwrite(data, len, 1, f) != 1) || fclose(f) != 0) {
		fprintf(stderr, "gen_corpus: %s: %s\n", path, strerror(errno));
		return -1;
	}
	return 0;
}

static int write_seed(const char *dir, const char *name, const struct mrc_packet *p)
{
	size_t len;
	int err = mrc_encode(p, out + 1, sizeof(out) - 1, &len);

	if (err) {
		fprintf(stderr, "gen_corpus: encoding %s: %s\n", name, mrc_wire_error_name(err));
		return -1;
	}
	out[0] = 1;
	return write_file(dir, name, out, len + 1);
}

static int codec_corpus(const char *dir)
{
	static const uint8_t payload[4096] = { 'm', 'e', 't', 'a' };
	static const uint8_t ops[] = {
		MRC_OP_WRITE,	    MRC_OP_WRITE_IMM, MRC_OP_SEND,	   MRC_OP_SEND_IMM,
		MRC_OP_READ_REQ,    MRC_OP_READ_RESP, MRC_OP_ACK,	   MRC_OP_NAK,
		MRC_OP_PROBE,	    MRC_OP_PROBE_REPLY, MRC_OP_DISCOVER, MRC_OP_DISCOVER_REPLY,
		MRC_OP_CLOSE,	    MRC_OP_ATOMIC_REQ, MRC_OP_UD_SEND,	   MRC_OP_UD_SEND_IMM,
		MRC_OP_SEND_INV,
	};
	int failed = 0;

	for (size_t i = 0; i < sizeof(ops); i++) {
		struct mrc_packet p;

		memset(&p, 0, sizeof(p));
		p.opcode = ops[i];
		p.dst_qpn = 0x11;
		p.psn = 0xfffffffe;
		p.tx_ts = 12345;
		p.path_id = 1;
		switch (ops[i]) {
		case MRC_OP_WRITE:
		case MRC_OP_WRITE_IMM:
		case MRC_OP_READ_RESP:
			p.u.data.rkey = 0x1234;
			p.u.data.raddr = 0x10000;
			/* fall through */
		case MRC_OP_SEND:
		case MRC_OP_SEND_IMM:
		case MRC_OP_SEND_INV:
			if (ops[i] == MRC_OP_SEND_INV)
				p.u.data.rkey = 0x40001; /* the receiver's key to invalidate */
			if (ops[i] == MRC_OP_WRITE_IMM || ops[i] == MRC_OP_SEND_IMM)
				p.u.data.imm = 0xabcd;
			if (ops[i] != MRC_OP_WRITE && ops[i] != MRC_OP_READ_RESP)
				p.u.data.rsn = 3;
			p.u.data.msn = 9;
			p.u.data.msg_len = 5000;
			p.u.data.msg_off = 1000;
			p.payload = payload;
			p.payload_len = 4000;
			break;
		case MRC_OP_READ_REQ:
			p.u.read_req.length = 8192;
			p.u.read_req.rkey = 1;
			p.u.read_req.sink_key = 2;
			p.u.read_req.raddr = 0x1000;
			p.u.read_req.sink_addr = 0x2000;
			break;
		case MRC_OP_ACK:
			p.u.ack.cum_psn = 100;
			p.u.ack.sack[1] = 0x81;
			p.u.ack.rate_hint_kbps = 1000000;
			break;
		case MRC_OP_NAK:
			p.u.nak.kind = MRC_NAK_RNR;
			p.u.nak.retry_after = 5;
			break;
		case MRC_OP_PROBE:
			p.payload = payload;
			p.payload_len = 64;
			/* fall through */
		case MRC_OP_PROBE_REPLY:
			p.u.probe.nonce = 42;
			break;
		case MRC_OP_DISCOVER:
		case MRC_OP_DISCOVER_REPLY:
			p.dst_qpn = 0;
			p.u.discover.node_id = 7;
			p.u.discover.udp_port = MRC_UDP_PORT_DEFAULT;
			p.u.discover.max_payload = 4096;
			p.u.discover.n_addrs = 2;
			p.u.discover.addrs[0].family = MRC_AF_INET;
			p.u.discover.addrs[0].addr[10] = 0xff;
			p.u.discover.addrs[0].addr[11] = 0xff;
			p.u.discover.addrs[0].addr[12] = 198;
			p.u.discover.addrs[0].addr[13] = 18;
			p.u.discover.addrs[0].addr[15] = 1;
			p.u.discover.addrs[1].family = MRC_AF_INET6;
			p.u.discover.addrs[1].plane = 1;
			p.u.discover.addrs[1].addr[0] = 0xfd;
			p.u.discover.addrs[1].addr[15] = 1;
			break;
		case MRC_OP_CLOSE:
			p.u.close.reason = MRC_CLOSE_ERROR;
			break;
		case MRC_OP_ATOMIC_REQ:
			p.u.atomic.op = MRC_ATOMIC_CMP_SWAP;
			p.u.atomic.rkey = 1;
			p.u.atomic.raddr = 0x1000;
			p.u.atomic.sink_addr = 0x2000;
			p.u.atomic.compare = 5;
			p.u.atomic.swap_add = 6;
			break;
		case MRC_OP_UD_SEND:
		case MRC_OP_UD_SEND_IMM:
			p.u.ud.src_qpn = 0x22;
			p.u.ud.qkey = 0x11111111;
			p.u.ud.imm = ops[i] == MRC_OP_UD_SEND_IMM ? 0xabcd : 0;
			p.payload = payload;
			p.payload_len = 1024;
			break;
		}
		failed |= write_seed(dir, mrc_opcode_name(ops[i]), &p);
	}
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

/*
 * Scripts for fuzz_conn: a handful of plausible sessions (post, pump, deliver, advance time,
 * inject) that the fuzzer mutates from. Bytes follow fuzz_conn.c's script format.
 */
static int conn_corpus(const char *dir)
{
	static const uint8_t scripts[][48] = {
		/* METAROCE both sides; post recv on B, SEND from A, pump, deliver, ack back */
		{ 0, 0, 0x81, 0, 0, 0, 64, 0, 0, 0, 64, 2, 2, 4, 0, 4, 0, 0x83, 4, 0, 6, 0, 50,
		  2, 4, 0 },
		/* WRITE from A, lots of pumping and delivery, a timeout */
		{ 0, 0, 0, 0, 16, 2, 0, 0, 2, 2, 4, 0, 4, 1, 4, 0, 0x83, 4, 0, 0x46, 0, 200, 2,
		  4, 0 },
		/* baseline mode, READ from A, drop one, retransmit */
		{ 1, 1, 0, 0, 32, 0, 200, 4, 2, 5, 0, 0x46, 0, 50, 2, 4, 0, 0x83, 4, 0, 4, 0 },
		/* injected ACK, NAK, PROBE, CLOSE into B */
		{ 0, 0, 7, 1, 0, 0, 0, 6, 0, 0, 1, 7, 1, 0, 0, 0, 7, 0, 0, 1, 7, 1, 0, 0, 0, 10,
		  0, 0, 0 },
	};
	char name[32];
	int failed = 0;

	for (size_t i = 0; i < sizeof(scripts) / sizeof(scripts[0]); i++) {
		snprintf(name, sizeof(name), "script%zu", i);
		failed |= write_file(dir, name, scripts[i], sizeof(scripts[i]));
	}
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

/*
 * Scripts for fuzz_peer (its format): name a peer, take its DISCOVER's answer, time passes,
 * a restart (new node id), a DISCOVER from outside the prefixes, planes drained; each behind
 * each of the four authentication modes' bytes.
 */
static int peer_corpus(const char *dir)
{
	static const uint8_t scripts[][40] = {
		/* seed 8 bytes; lookup .0.2; reply matching peer 0 from .0.2; time; send */
		{ 0, 0, 0, 0, 0, 0, 0, 7, 0, 1, 0, 1, 7, 0, 0, 1, 0x12, 0x34, 2, 0x10, 0x21, 1,
		  0x12, 0xb7, 0, 4, 200, 10 },
		/* DISCOVER from an admitted source, then from outside, then a restart */
		{ 0, 0, 0, 0, 0, 0, 0, 9, 1, 0, 0, 0, 0, 1, 1, 0, 0x10, 0, 1, 0x12, 0xb7, 0, 1, 0,
		  0, 0, 0, 1, 1, 0, 0x10, 0, 0, 4, 0x12, 0xb7, 0, 3, 0x11 },
		/* lookups until the table is full, long silences: retries, unreachable */
		{ 0, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0, 0, 1, 1, 0, 2, 2, 0, 3, 0, 4, 250, 20, 4, 250,
		  24, 4, 255, 23, 0, 5, 0 },
	};
	char name[32];
	int failed = 0;

	for (size_t i = 0; i < sizeof(scripts) / sizeof(scripts[0]); i++)
		for (uint8_t mode = 0; mode < 4; mode++) {
			uint8_t moded[1 + sizeof(scripts[0])] = { mode };

			memcpy(moded + 1, scripts[i], sizeof(scripts[i]));
			snprintf(name, sizeof(name), "script%zu-auth%u", i, mode);
			failed |= write_file(dir, name, moded, sizeof(moded));
		}
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

/* metaroced.conf files: the documented example and a few edges. */
static int config_corpus(const char *dir)
{
	static const char *const files[] = {
		"backend = udp\nport = 4792\nplane = 0 eth1 198.18.0.1\n"
		"plane = 1 eth2 2001:db8::1\npaths_per_plane = 4\nmtu = 9000\n"
		"rx_capacity = 100G\npeer_prefix = 198.18.0.0/15\n"
		"control_socket = /run/metaroce/metaroced.sock\nbusy_poll = no\n",
		"# comment only\n\n   \t\n",
		"plane = 15 veth-a 198.19.255.254 # trailing comment\r\n",
		"peer_prefix = fd00::/8\npeer_prefix = 0.0.0.0/0\n",
		"auth = header\ncluster_key_file = /etc/metaroce/cluster.key\n"
		"key_file = /var/lib/metaroce/private.key\n"
		"allowed_peer = 4vTlx4Ww3uGGcyV1ZB9Y1f8yDPdxsPqXsB0bqdYqZC0= 198.18.0.2/32,fd00::/8\n",
	};
	char name[32];
	int failed = 0;

	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		snprintf(name, sizeof(name), "conf%zu", i);
		failed |= write_file(dir, name, files[i], strlen(files[i]));
	}
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

/* Control requests: the two the daemon serves, and one it does not. */
static int ctl_corpus(const char *dir)
{
	static const uint16_t types[] = { MRC_CTL_STATUS, MRC_CTL_PEERS, 99 };
	char name[32];
	int failed = 0;

	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
		struct mrc_ctl_hdr h = { .magic = MRC_CTL_MAGIC, .version = MRC_CTL_VERSION,
					 .type = types[i], .seq = 7 };

		snprintf(name, sizeof(name), "req%zu", i);
		failed |= write_file(dir, name, &h, sizeof(h));
	}
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

/* Command lines for fuzz_cli: arguments separated by NUL bytes. */
static int cli_corpus(const char *dir)
{
#define ARGS(s) { s, sizeof(s) - 1 }
	static const struct {
		const char *text;
		size_t len;
	} lines[] = {
		ARGS("status"),	      ARGS("qp\0show"),   ARGS("-j\0-p\0path\0show"),
		ARGS("path\0set\0plane\0" "1\0down"),   ARGS("-s\0q\0s"),
		ARGS("config\0reload"), ARGS("help"),	  ARGS("path\0help"),
		ARGS("monitor"),	      ARGS("m"),	  ARGS("frob"),
		ARGS("-V"),		      ARGS("stat\0reset"), ARGS("config\0show"),
		ARGS("xdp"),
	};
#undef ARGS
	char name[32];
	int failed = 0;

	for (size_t i = 0; i < sizeof(lines) / sizeof(lines[0]); i++) {
		snprintf(name, sizeof(name), "args%zu", i);
		failed |= write_file(dir, name, lines[i].text, lines[i].len);
	}
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

/* Frames for fuzz_frame: received ones (mode 0, a capacity, then Ethernet, IPv4 or IPv6, UDP,
 * a few bytes) and a datagram to build (mode 1, then addresses, ports, lengths, bytes). */
static int frame_corpus(const char *dir)
{
	static const uint8_t v4[] = {
		0, 0xff, 2, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 2, 0x08, 0x00,
		0x45, 0x03, 0, 32, 0, 1, 0x40, 0, 64, 17, 0, 0, 198, 18, 0, 1, 198, 18, 0, 2,
		0xc3, 0x50, 0x12, 0xb7, 0, 12, 0, 0, 1, 2, 3, 4,
	};
	static const uint8_t v6[] = {
		0, 0xff, 2, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 2, 0x86, 0xdd,
		0x60, 0x20, 0, 0, 0, 12, 17, 64,
		0x20, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1,
		0x20, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2,
		0xc3, 0x50, 0x12, 0xb7, 0, 12, 0, 0, 1, 2, 3, 4,
	};
	uint8_t ip4[sizeof(v4)], build[1 + 32 + 4 + 2 + 64];
	int failed = 0;

	/* the IPv4 header's checksum, so that the seed is a frame the parser takes */
	memcpy(ip4, v4, sizeof(v4));
	store_be16(ip4 + 2 + 14 + 10, (uint16_t)~mrc_csum_fold(mrc_csum_add(0, ip4 + 2 + 14, 20)));
	failed |= write_file(dir, "ipv4", ip4, sizeof(ip4));
	failed |= write_file(dir, "ipv6", v6, sizeof(v6));
	for (unsigned i = 0; i < sizeof(build); i++)
		build[i] = (uint8_t)(i * 37);
	build[0] = 1;
	failed |= write_file(dir, "build4", build, sizeof(build));
	build[0] = 3;
	failed |= write_file(dir, "build6", build, sizeof(build));
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

/* Scripts for fuzz_admission (its format): real packets of the transfer sent again, changed
 * in the header with the checksum made right, from the peer's address and a stranger's, and a
 * DISCOVER from the encoder with no tag. */
static int admission_corpus(const char *dir)
{
	static const uint8_t again[] = { 0, 4, 0x20, 0, 4, 0x21, 0, 40, 0x22, 0 };
	static const uint8_t changed[] = { 1, 2, 0x30, 4, 0, 0, 0, 1, 9, 0x35, 24, [33] = 0x80 };
	struct mrc_packet d = { .opcode = MRC_OP_DISCOVER, .psn = 7 };
	uint8_t script[1 + 3 + MRC_WIRE_MAX_PACKET] = { 2, 1, 0x10 };
	size_t len;
	int failed = 0;

	failed |= write_file(dir, "again", again, sizeof(again));
	failed |= write_file(dir, "changed", changed, sizeof(changed));
	d.u.discover = (struct mrc_discover){ .node_id = 99, .udp_port = 4791, .max_payload = 4096,
					      .n_addrs = 1 };
	d.u.discover.addrs[0].family = MRC_AF_INET;
	memcpy(d.u.discover.addrs[0].addr, (const uint8_t[16]){ [10] = 0xff, [11] = 0xff, 198, 18, 0, 9 },
	       16);
	if (mrc_encode(&d, script + 4, sizeof(script) - 4, &len) || len > 255)
		return EXIT_FAILURE;
	script[3] = (uint8_t)len;
	failed |= write_file(dir, "discover", script, 4 + len);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

/* Requests for fuzz_requests (its format: a type's index, a length, the payload): a CQ, a
 * QP on it and its destruction; a region of the client's memory and its deregistration. */
static size_t request_record(uint8_t *at, uint8_t type_index, const void *payload, uint8_t len)
{
	at[0] = type_index;
	at[1] = len;
	memcpy(at + 2, payload, len);
	return 2u + len;
}

static int requests_corpus(const char *dir)
{
	struct mrc_ctl_create_cq cq = { 16, 0 };
	struct mrc_ctl_create_qp qp = { 1, 1, 8, 8, 0, 1, 0, MRC_CTL_QPT_RC };
	struct mrc_ctl_handle first = { 1, 0 };
	struct {
		struct mrc_ctl_reg_mr r;
		struct mrc_ctl_mr_segment s;
	} reg = { { 0x10000, 4096, 0, MRC_CTL_ACCESS_ALL, 1, 1, 0 }, { 0, 4096 } };
	uint8_t script[512];
	size_t n = 0;
	int failed = 0;

	/* indexes into fuzz_requests' table: 6 CREATE_CQ, 8 CREATE_QP, 18 DESTROY_QP,
	 * 2 REG_MR, 3 DEREG_MR */
	n += request_record(script + n, 6, &cq, sizeof(cq));
	n += request_record(script + n, 8, &qp, sizeof(qp));
	n += request_record(script + n, 18, &first, sizeof(first));
	failed |= write_file(dir, "cq_qp", script, n);
	n = request_record(script, 2, &reg, sizeof(reg));
	n += request_record(script + n, 3, &first, sizeof(first));
	failed |= write_file(dir, "region", script, n);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

/* One message of each type, as the daemons send them. */
static int cm_corpus(const char *dir)
{
	static const uint8_t priv[8] = "private";
	int failed = 0;

	for (uint8_t t = 1; t <= MRC_CM_TYPE_MAX; t++) {
		bool first = t == MRC_CM_REQ || t == MRC_CM_SIDR_REQ;
		bool sidr = t == MRC_CM_SIDR_REQ || t == MRC_CM_SIDR_REP;
		struct mrc_cm m = { .type = t, .port_space = sidr ? MRC_CM_PS_UDP : MRC_CM_PS_TCP,
				    .local_comm_id = 0x1234, .remote_comm_id = first ? 0 : 0x5678,
				    .node_id = 0x0102030405060708ull, .src_port = 40000,
				    .dst_port = 7174, .private_data = priv, .private_len = 8 };
		uint8_t msg[sizeof(struct mrc_cm_msg) + 8];
		char name[32];
		size_t n;

		if (t == MRC_CM_REQ || t == MRC_CM_REP || t == MRC_CM_SIDR_REP)
			m.qpn = 0x4321;
		if (t == MRC_CM_REQ || t == MRC_CM_REP) {
			m.responder_resources = m.initiator_depth = 1;
			m.rnr_retry_count = 7;
			m.retry_count = t == MRC_CM_REQ ? 7 : 0;
		}
		if (t == MRC_CM_SIDR_REP)
			m.qkey = 0x1234567;
		if (t == MRC_CM_REJ)
			m.status = MRC_CM_REJ_CONSUMER_DEFINED;
		n = mrc_cm_encode(&m, msg, sizeof(msg));
		snprintf(name, sizeof(name), "%s", mrc_cm_type_name(t));
		failed |= !n || write_file(dir, name, msg, n);
	}
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

int main(int argc, char **argv)
{
	static const struct {
		const char *harness;
		int (*write)(const char *dir);
	} corpora[] = {
		{ "codec", codec_corpus },   { "config", config_corpus }, { "ctl", ctl_corpus },
		{ "cli", cli_corpus },	     { "conn", conn_corpus },	  { "peer", peer_corpus },
		{ "frame", frame_corpus },   { "admission", admission_corpus },
		{ "requests", requests_corpus }, { "cm", cm_corpus },
	};

	for (size_t i = 0; argc == 3 && i < sizeof(corpora) / sizeof(corpora[0]); i++)
		if (strcmp(argv[1], corpora[i].harness) == 0)
			return corpora[i].write(argv[2]);
	fprintf(stderr, "usage: gen_corpus codec|conn|config|ctl|cli|peer|frame|admission|"
			"requests|cm DIR\n");
	return 2;
}
