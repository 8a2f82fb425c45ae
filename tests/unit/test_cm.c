/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Connection-management messages (lib/proto/cm.c, SPEC 17): each type round-trips byte for
 * byte, and each rule of R-534 refuses what breaks it, by its own error code.
 */
#include <string.h>

#include "proto/cm.h"
#include "suites.h"

static struct mrc_cm valid(uint8_t type)
{
	static const uint8_t priv[MRC_CM_PRIVATE_MAX] = { 1, 2, 3, 4, 5, 6, 7, 8 };
	bool first = type == MRC_CM_REQ || type == MRC_CM_SIDR_REQ;
	bool sidr = type == MRC_CM_SIDR_REQ || type == MRC_CM_SIDR_REP;
	struct mrc_cm m = {
		.type = type, .port_space = sidr ? MRC_CM_PS_UDP : MRC_CM_PS_TCP,
		.local_comm_id = 0x1234, .remote_comm_id = first ? 0 : 0x5678,
		.node_id = 0x0102030405060708ull, .src_port = 40000, .dst_port = 7174,
		.private_data = priv, .private_len = (uint8_t)mrc_cm_private_max(type),
	};

	if (type == MRC_CM_REQ || type == MRC_CM_REP) {
		m.qpn = 0xabcdef;
		m.flags = MRC_CM_F_SRQ;
		m.responder_resources = 4;
		m.initiator_depth = 5;
		m.retry_count = type == MRC_CM_REQ ? 7 : 0;
		m.rnr_retry_count = 6;
	}
	if (type == MRC_CM_SIDR_REP) {
		m.qpn = 0x1000;
		m.qkey = 0x1234567;
	}
	if (type == MRC_CM_REJ)
		m.status = MRC_CM_REJ_CONSUMER_DEFINED;
	memset(m.src_addr, 0x11, 16);
	memset(m.dst_addr, 0x22, 16);
	return m;
}

START_TEST(cm__every_type_round_trips)
{
	for (uint8_t t = 1; t <= MRC_CM_TYPE_MAX; t++) {
		struct mrc_cm m = valid(t), back;
		uint8_t buf[512], again[512];
		size_t n = mrc_cm_encode(&m, buf, sizeof(buf));

		ck_assert_uint_eq(n, sizeof(struct mrc_cm_msg) + m.private_len);
		ck_assert_int_eq(mrc_cm_decode(buf, n, &back), MRC_CM_OK);
		ck_assert_uint_eq(back.type, t);
		ck_assert_uint_eq(back.node_id, m.node_id);
		ck_assert_uint_eq(back.qpn, m.qpn);
		ck_assert_uint_eq(back.qkey, m.qkey);
		ck_assert_mem_eq(back.private_data, m.private_data, m.private_len);
		ck_assert_uint_eq(mrc_cm_encode(&back, again, sizeof(again)), n);
		ck_assert_mem_eq(again, buf, n);
		/* the fixed part's fields where the wire struct says */
		ck_assert_uint_eq(buf[offsetof(struct mrc_cm_msg, type)], t);
		ck_assert_uint_eq(buf[offsetof(struct mrc_cm_msg, dst_port)], 7174 >> 8);
		ck_assert_str_ne(mrc_cm_type_name(t), "unknown");
		/* one byte short, one byte more */
		ck_assert_int_eq(mrc_cm_decode(buf, n - 1, &back), MRC_CM_E_SHORT);
		ck_assert_int_eq(mrc_cm_decode(buf, n + 1, &back), MRC_CM_E_LENGTH);
		ck_assert_uint_eq(mrc_cm_encode(&m, buf, n - 1), 0);
	}
}
END_TEST

/* Message `type` changed by `change`, encoded past the checks, must decode to `err`. */
static void refused(uint8_t type, void (*change)(struct mrc_cm *), enum mrc_cm_error err)
{
	struct mrc_cm m = valid(type), back;
	uint8_t buf[512];
	size_t n;

	memset(buf, 0, sizeof(buf));
	change(&m);
	ck_assert_uint_eq(mrc_cm_encode(&m, buf, sizeof(buf)), 0); /* never written either */
	m = valid(type);
	n = mrc_cm_encode(&m, buf, sizeof(buf));
	/* the change made in the bytes, as a peer would send it */
	{
		struct mrc_cm bad = m;

		change(&bad);
		buf[offsetof(struct mrc_cm_msg, type)] = bad.type;
		buf[offsetof(struct mrc_cm_msg, port_space)] = bad.port_space;
		buf[offsetof(struct mrc_cm_msg, flags)] = bad.flags;
		buf[offsetof(struct mrc_cm_msg, retry_count)] = bad.retry_count;
		buf[offsetof(struct mrc_cm_msg, local_comm_id) + 3] = (uint8_t)bad.local_comm_id;
		buf[offsetof(struct mrc_cm_msg, local_comm_id) + 2] =
			(uint8_t)(bad.local_comm_id >> 8);
		buf[offsetof(struct mrc_cm_msg, remote_comm_id) + 3] = (uint8_t)bad.remote_comm_id;
		buf[offsetof(struct mrc_cm_msg, remote_comm_id) + 2] =
			(uint8_t)(bad.remote_comm_id >> 8);
		buf[offsetof(struct mrc_cm_msg, qpn) + 3] = (uint8_t)bad.qpn;
		buf[offsetof(struct mrc_cm_msg, qpn) + 2] = (uint8_t)(bad.qpn >> 8);
		buf[offsetof(struct mrc_cm_msg, qpn) + 1] = (uint8_t)(bad.qpn >> 16);
		buf[offsetof(struct mrc_cm_msg, qpn)] = (uint8_t)(bad.qpn >> 24);
		buf[offsetof(struct mrc_cm_msg, status) + 3] = (uint8_t)bad.status;
		if (bad.private_len != m.private_len) {
			buf[offsetof(struct mrc_cm_msg, private_len)] = bad.private_len;
			n = sizeof(struct mrc_cm_msg) + bad.private_len;
		}
	}
	ck_assert_int_eq(mrc_cm_decode(buf, n, &back), err);
	ck_assert_str_ne(mrc_cm_error_name(err), "unknown");
}

static void no_type(struct mrc_cm *m) { m->type = 0; }
static void type_9(struct mrc_cm *m) { m->type = MRC_CM_TYPE_MAX + 1; }
static void ps_unknown(struct mrc_cm *m) { m->port_space = 0x07; }
static void ps_udp(struct mrc_cm *m) { m->port_space = MRC_CM_PS_UDP; }
static void ps_tcp(struct mrc_cm *m) { m->port_space = MRC_CM_PS_TCP; }
static void private_over(struct mrc_cm *m) { m->private_len = (uint8_t)(m->private_len + 1); }
static void no_local(struct mrc_cm *m) { m->local_comm_id = 0; }
static void has_remote(struct mrc_cm *m) { m->remote_comm_id = 9; }
static void no_remote(struct mrc_cm *m) { m->remote_comm_id = 0; }
static void qpn_zero(struct mrc_cm *m) { m->qpn = 0; }
static void qpn_cm(struct mrc_cm *m) { m->qpn = MRC_QPN_CM; }
static void qpn_wide(struct mrc_cm *m) { m->qpn = MRC_QPN_MAX + 1; }
static void qpn_some(struct mrc_cm *m) { m->qpn = 0x4444; }
static void status_some(struct mrc_cm *m) { m->status = 1; }
static void status_none(struct mrc_cm *m) { m->status = 0; }
static void flag_unknown(struct mrc_cm *m) { m->flags = 0x80; }
static void retry_8(struct mrc_cm *m) { m->retry_count = 8; }
static void flags_on_rtu(struct mrc_cm *m) { m->flags = MRC_CM_F_SRQ; }

START_TEST(cm__each_rule_refuses_by_name)
{
	refused(MRC_CM_REQ, no_type, MRC_CM_E_TYPE);
	refused(MRC_CM_REQ, type_9, MRC_CM_E_TYPE);
	refused(MRC_CM_REQ, ps_unknown, MRC_CM_E_PORT_SPACE);
	refused(MRC_CM_REQ, ps_udp, MRC_CM_E_PORT_SPACE); /* a connection in a datagram space */
	refused(MRC_CM_SIDR_REQ, ps_tcp, MRC_CM_E_PORT_SPACE);
	for (uint8_t t = 1; t <= MRC_CM_TYPE_MAX; t++)
		if (mrc_cm_private_max(t) < MRC_CM_PRIVATE_MAX)
			refused(t, private_over, MRC_CM_E_PRIVATE);
	refused(MRC_CM_REP, no_local, MRC_CM_E_COMM_ID);
	refused(MRC_CM_REQ, has_remote, MRC_CM_E_COMM_ID);
	refused(MRC_CM_DREQ, no_remote, MRC_CM_E_COMM_ID);
	refused(MRC_CM_REQ, qpn_zero, MRC_CM_E_QPN);
	refused(MRC_CM_REP, qpn_cm, MRC_CM_E_QPN);
	refused(MRC_CM_REQ, qpn_wide, MRC_CM_E_QPN);
	refused(MRC_CM_RTU, qpn_some, MRC_CM_E_QPN);
	refused(MRC_CM_DREQ, status_some, MRC_CM_E_RESERVED);
	refused(MRC_CM_REJ, status_none, MRC_CM_E_RESERVED);
	refused(MRC_CM_REQ, flag_unknown, MRC_CM_E_RESERVED);
	refused(MRC_CM_REQ, retry_8, MRC_CM_E_RESERVED);
	refused(MRC_CM_RTU, flags_on_rtu, MRC_CM_E_RESERVED);
}
END_TEST

START_TEST(cm__refusals_need_no_id_of_their_own)
{
	/* nobody listens: a REJ or SIDR_REP from a side that made no id */
	struct mrc_cm rej = valid(MRC_CM_REJ), sidr = valid(MRC_CM_SIDR_REP), back;
	uint8_t buf[512];
	size_t n;

	rej.local_comm_id = 0;
	n = mrc_cm_encode(&rej, buf, sizeof(buf));
	ck_assert_uint_ne(n, 0);
	ck_assert_int_eq(mrc_cm_decode(buf, n, &back), MRC_CM_OK);
	/* and a REQ's sender taking it back names only its own */
	rej = valid(MRC_CM_REJ);
	rej.remote_comm_id = 0;
	ck_assert_uint_ne(mrc_cm_encode(&rej, buf, sizeof(buf)), 0);
	sidr.local_comm_id = 0;
	sidr.status = MRC_CM_SIDR_UNSUPPORTED;
	sidr.qpn = 0;
	sidr.qkey = 0;
	n = mrc_cm_encode(&sidr, buf, sizeof(buf));
	ck_assert_uint_ne(n, 0);
	ck_assert_int_eq(mrc_cm_decode(buf, n, &back), MRC_CM_OK);
	ck_assert_uint_eq(back.status, MRC_CM_SIDR_UNSUPPORTED);
	ck_assert_int_eq(mrc_cm_decode(buf, 10, &back), MRC_CM_E_SHORT);
}
END_TEST

Suite *cm_suite(void)
{
	Suite *s = suite_create("cm");
	TCase *tc = tcase_create("cm");

	tcase_add_test(tc, cm__every_type_round_trips);
	tcase_add_test(tc, cm__each_rule_refuses_by_name);
	tcase_add_test(tc, cm__refusals_need_no_id_of_their_own);
	suite_add_tcase(s, tc);
	return s;
}
