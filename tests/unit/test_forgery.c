/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * lib/proto against forged control packets, in virtual time: an attacker who knows a QP's
 * number and its peer's address but not its sequence state injects CLOSE, RNR and error
 * NAKs, throttling ACKs and ACKs of unsent data into a transfer in flight. None may end,
 * slow or corrupt it; the same packets with the right sequence numbers do.
 */
#include <stdio.h>
#include <string.h>

#include "conn_xfer.h"
#include "proto/path.h"
#include "suites.h"

/* A 32-bit value outside [una - 256, nxt]: what a blind guess is almost always. */
static uint32_t implausible_psn(struct sim *sim, const struct mrc_conn_info *info)
{
	for (;;) {
		uint32_t v = (uint32_t)sim_random(sim);

		if (v - (info->snd_una - MRC_SACK_BITS) > info->snd_nxt - (info->snd_una - MRC_SACK_BITS))
			return v;
	}
}

static void start_transfer(struct xfer *x, struct sim_config *sc)
{
	struct mrc_conn_config cc;

	sim_config_default(sc);
	mrc_conn_config_default(&cc);
	xfer_init(x, sc, &cc, 4, 4 << 20);
	xfer_post(x, MRC_WR_WRITE, 2 << 20, 0);
	xfer_post(x, MRC_WR_SEND, 1 << 20, 0);
	xfer_run_to_midway(x);
}

static int inject(struct xfer *x, struct mrc_conn *victim, struct mrc_packet *p)
{
	struct mrc_rx_info rx = { 0 };

	p->dst_qpn = x->a->conn == victim ? x->a->qpn : x->b->qpn;
	p->tx_ts = (uint32_t)x->sim->now_ns;
	return mrc_conn_recv_packet(victim, &rx, p, x->sim->now_ns);
}

/* Every forgery is refused whole: state, rate hint and windows stay as they were. */
START_TEST(mrc_conn__forged_control_packets_change_nothing)
{
	struct sim_config sc;
	struct xfer x;
	struct mrc_conn_info before, after;
	uint32_t cwnd[MRC_MAX_PATHS];
	uint64_t bad_before, dropped_before;
	unsigned n = 0;

	start_transfer(&x, &sc);
	mrc_conn_get_info(x.a->conn, &before);
	for (unsigned i = 0; i < MRC_MAX_PATHS && mrc_conn_path(x.a->conn, i); i++)
		cwnd[i] = mrc_conn_path(x.a->conn, i)->cc.cwnd;
	bad_before = x.a->drops[MRC_DROP_BAD_ACK];
	dropped_before = mrc_conn_stats(x.a->conn)->rx_dropped;
	for (unsigned round = 0; round < 200; round++) {
		struct mrc_packet p;
		uint32_t cum = round == 0 ? before.snd_nxt + 1 :
			       round == 1 ? before.snd_una - MRC_SACK_BITS - 1 :
					    implausible_psn(x.sim, &before);

		/* CLOSE: tears a QP down in one packet unless its cum_psn is checked */
		memset(&p, 0, sizeof(p));
		p.opcode = MRC_OP_CLOSE;
		p.u.close.reason = MRC_CLOSE_ERROR;
		p.u.close.cum_psn = cum;
		ck_assert_int_eq(inject(&x, x.a->conn, &p), MRC_DROP_BAD_ACK);
		/* ACK with a 1 kbit/s rate hint and ECE: stalls the QP unless checked */
		memset(&p, 0, sizeof(p));
		p.opcode = MRC_OP_ACK;
		p.flags = MRC_F_ECE;
		p.u.ack.cum_psn = cum;
		p.u.ack.rate_hint_kbps = 1;
		p.u.ack.echo_path = (uint16_t)(round % 4);
		memset(p.u.ack.sack, 0xff, sizeof(p.u.ack.sack));
		p.u.ack.sack[0] &= (uint8_t)~1u;
		ck_assert_int_eq(inject(&x, x.a->conn, &p), MRC_DROP_BAD_ACK);
		/* error NAK: puts the QP in ERR; with a plausible cum_psn but a guessed nak_psn,
		 * and with both guessed */
		memset(&p, 0, sizeof(p));
		p.opcode = MRC_OP_NAK;
		p.u.nak.kind = (uint8_t)(round % 2 ? MRC_NAK_REMOTE_ACCESS : MRC_NAK_REMOTE_OP);
		p.u.nak.cum_psn = before.snd_una;
		p.u.nak.nak_psn = cum;
		ck_assert_int_eq(inject(&x, x.a->conn, &p), MRC_DROP_BAD_ACK);
		p.u.nak.cum_psn = cum;
		p.u.nak.kind = MRC_NAK_RNR;
		p.u.nak.retry_after = 65535;
		ck_assert_int_eq(inject(&x, x.a->conn, &p), MRC_DROP_BAD_ACK);
		p.u.nak.kind = MRC_NAK_SEQ;
		ck_assert_int_eq(inject(&x, x.a->conn, &p), MRC_DROP_BAD_ACK);
		n += 5;
	}
	ck_assert_uint_eq(x.a->drops[MRC_DROP_BAD_ACK] - bad_before, n);
	/* the QP's own total agrees with the table by reason */
	ck_assert_uint_eq(mrc_conn_stats(x.a->conn)->rx_dropped - dropped_before, n);
	mrc_conn_get_info(x.a->conn, &after);
	ck_assert_int_eq(mrc_conn_state(x.a->conn), MRC_QPS_RTS);
	ck_assert_uint_eq(after.rate_hint_kbps, before.rate_hint_kbps);
	ck_assert_uint_eq(after.snd_una, before.snd_una);
	ck_assert_uint_eq(after.lost_pending, before.lost_pending);
	for (unsigned i = 0; i < MRC_MAX_PATHS && mrc_conn_path(x.a->conn, i); i++)
		ck_assert_uint_eq(mrc_conn_path(x.a->conn, i)->cc.cwnd, cwnd[i]);
	/* the transfer goes on to the last byte, checked */
	xfer_run(&x, 1000000000ull);
	xfer_free(&x);
}
END_TEST

/* Data forged into the responder at a guessed PSN lands nowhere. */
START_TEST(mrc_conn__forged_data_lands_nowhere)
{
	struct sim_config sc;
	struct xfer x;
	struct mrc_conn_info info;
	static uint8_t junk[1024];

	start_transfer(&x, &sc);
	mrc_conn_get_info(x.b->conn, &info);
	memset(junk, 0xa5, sizeof(junk));
	for (unsigned round = 0; round < 200; round++) {
		struct mrc_packet p;
		uint32_t psn;

		do
			psn = (uint32_t)sim_random(x.sim);
		while (psn - info.rcv_cum_psn < 2 * MRC_SACK_BITS);
		memset(&p, 0, sizeof(p));
		p.opcode = round % 2 ? MRC_OP_WRITE : MRC_OP_SEND;
		p.psn = psn;
		p.u.data.msg_len = sizeof(junk);
		p.u.data.rkey = x.key_b_dst;
		p.u.data.raddr = (uintptr_t)x.b_dst;
		p.u.data.rsn = 1;
		p.payload = junk;
		p.payload_len = sizeof(junk);
		ck_assert_int_ne(inject(&x, x.b->conn, &p), MRC_DROP_NONE);
	}
	xfer_run(&x, 1000000000ull); /* every byte of b_dst and b_rcv checked */
	xfer_free(&x);
}
END_TEST

/*
 * PROBEs forged in the peer's name get at most MRC_MAX_PATHS answers a millisecond, so the
 * QP is no reflector aimed at its peer; later ones are answered again.
 */
START_TEST(mrc_conn__forged_probes_answered_at_a_bounded_rate)
{
	struct sim_config sc;
	struct xfer x;
	struct mrc_packet p;
	uint64_t t0, stale;

	start_transfer(&x, &sc);
	xfer_run(&x, 1000000000ull);
	stale = x.a->drops[MRC_DROP_STALE_PROBE];
	t0 = x.sim->now_ns;
	for (unsigned i = 0; i < 1000; i++) {
		memset(&p, 0, sizeof(p));
		p.opcode = MRC_OP_PROBE;
		p.u.probe.nonce = sim_random(x.sim);
		ck_assert_int_eq(inject(&x, x.b->conn, &p), MRC_DROP_NONE);
		x.b->dirty = true;
		sim_run(x.sim, x.sim->now_ns + 200, NULL, NULL); /* answers go out between */
	}
	ck_assert_uint_lt(x.sim->now_ns - t0, 1000000);
	sim_run(x.sim, x.sim->now_ns + 100000, NULL, NULL);
	/* the answers reach a, which sent no such probe */
	ck_assert_uint_le(x.a->drops[MRC_DROP_STALE_PROBE] - stale,
			  MRC_MAX_PATHS);
	ck_assert_uint_ge(mrc_conn_stats(x.b->conn)->probe_replies_limited, 1000 - MRC_MAX_PATHS);
	/* a millisecond on, the QP answers again */
	sim_run(x.sim, t0 + 2000000, NULL, NULL);
	stale = x.a->drops[MRC_DROP_STALE_PROBE];
	ck_assert_int_eq(inject(&x, x.b->conn, &p), MRC_DROP_NONE);
	x.b->dirty = true;
	sim_run(x.sim, x.sim->now_ns + 100000, NULL, NULL);
	ck_assert_uint_eq(x.a->drops[MRC_DROP_STALE_PROBE] - stale, 1);
	xfer_free(&x);
}
END_TEST

/* The same CLOSE with the sequence state it must know ends the QP, and a lingering one. */
START_TEST(mrc_conn__close_that_knows_the_window_ends_the_qp)
{
	struct sim_config sc;
	struct xfer x;
	struct mrc_conn_info info;
	struct mrc_packet p;

	start_transfer(&x, &sc);
	xfer_run(&x, 1000000000ull);
	/* b lingers after its destruction; a CLOSE it cannot check does not end that */
	sim_destroy(x.b, true);
	mrc_conn_get_info(x.b->conn, &info);
	memset(&p, 0, sizeof(p));
	p.opcode = MRC_OP_CLOSE;
	p.u.close.cum_psn = info.snd_nxt + 1;
	ck_assert_int_eq(inject(&x, x.b->conn, &p), MRC_DROP_BAD_ACK);
	ck_assert_int_eq(mrc_conn_state(x.b->conn), MRC_QPS_CLOSING);
	p.u.close.cum_psn = info.snd_nxt;
	ck_assert_int_eq(inject(&x, x.b->conn, &p), MRC_DROP_NONE);
	ck_assert_int_eq(mrc_conn_state(x.b->conn), MRC_QPS_CLOSED);
	/* a at RTS, nothing outstanding: the acknowledgement state is its snd_nxt */
	mrc_conn_get_info(x.a->conn, &info);
	p.u.close.cum_psn = info.snd_nxt - MRC_SACK_BITS - 1;
	ck_assert_int_eq(inject(&x, x.a->conn, &p), MRC_DROP_BAD_ACK);
	ck_assert_int_eq(mrc_conn_state(x.a->conn), MRC_QPS_RTS);
	p.u.close.cum_psn = info.snd_nxt - MRC_SACK_BITS;
	ck_assert_int_eq(inject(&x, x.a->conn, &p), MRC_DROP_NONE);
	ck_assert_int_eq(mrc_conn_state(x.a->conn), MRC_QPS_ERR);
	xfer_free(&x);
}
END_TEST

Suite *forgery_suite(void)
{
	Suite *s = suite_create("forgery");
	TCase *t = tcase_create("forgery");

	tcase_add_test(t, mrc_conn__forged_control_packets_change_nothing);
	tcase_add_test(t, mrc_conn__forged_data_lands_nowhere);
	tcase_add_test(t, mrc_conn__close_that_knows_the_window_ends_the_qp);
	tcase_add_test(t, mrc_conn__forged_probes_answered_at_a_bounded_rate);
	tcase_set_timeout(t, 60);
	suite_add_tcase(s, t);
	return s;
}
