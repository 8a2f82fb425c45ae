/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Draining a queue before the receiver, packet by packet between two engine
 * connections whose clocks differ: what an ACK reports as queueing delay, and how long the
 * sender then holds back.
 */

#include "proto/codec.h"
#include "proto/conn.h"
#include "suites.h"

#define CLOCK_OFFSET_NS 5000000123ull /* the receiver's clock is ahead by 5 s and change */
#define SEND_AT_NS 0xfffff000ull      /* the sender's clock wraps 2^32 ns mid-test */

static uint8_t memory[1 << 16];

static int lookup(void *user, uint32_t key, uint64_t addr, uint32_t len, unsigned access,
		  uint8_t **host)
{
	(void)user, (void)key, (void)len, (void)access;
	*host = memory + (addr & 0x7fff);
	return 0;
}

static void completed(void *user, bool from_recv, const struct mrc_completion *wc)
{
	(void)user, (void)from_recv, (void)wc;
}

struct pair {
	struct mrc_conn *a, *b; /* a writes to b */
	uint8_t buf[9216];
	size_t len;
	struct mrc_tx_info tx;
};

static void pair_open(struct pair *p, unsigned n_paths, uint8_t mode)
{
	static const struct mrc_conn_callbacks cb = { .mr_lookup = lookup, .complete = completed };
	struct mrc_conn_config cc;
	struct mrc_send_wr wr = { .opcode = MRC_WR_WRITE, .num_sge = 1, .rkey = 1 };

	mrc_conn_config_default(&cc);
	cc.mode = mode;
	cc.n_paths = (uint8_t)n_paths;
	for (unsigned i = 0; i < n_paths; i++)
		cc.paths[i] = (struct mrc_path_config){ 0, (uint16_t)(50000 + i) };
	cc.cc.init_cwnd = 16;
	cc.local_qpn = 1;
	cc.remote_qpn = 2;
	p->a = mrc_conn_new(&cc, &cb, NULL, SEND_AT_NS);
	cc.local_qpn = 2;
	cc.remote_qpn = 1;
	p->b = mrc_conn_new(&cc, &cb, NULL, SEND_AT_NS + CLOCK_OFFSET_NS);
	ck_assert_ptr_nonnull(p->a);
	ck_assert_ptr_nonnull(p->b);
	wr.sge[0] = (struct mrc_sge){ memory, 0, 16 * 4096, 0 };
	ck_assert_int_eq(mrc_conn_post_send(p->a, &wr), 0);
}

static void pair_close(struct pair *p)
{
	mrc_conn_free(p->a);
	mrc_conn_free(p->b);
}

/* The sender's next data packet, sent at its time t. */
static void sender_sends(struct pair *p, uint64_t t)
{
	ck_assert(mrc_conn_send(p->a, p->buf, sizeof(p->buf), &p->tx, t, &p->len));
	ck_assert(mrc_opcode_is_data(p->tx.opcode));
}

/*
 * It reaches the receiver one_way_ns later (the sender's time), CE-marked or not; returns the
 * queue_delay of the ACK the receiver sends for it, at once or when its ACK delay is up, and
 * sets acked_at, when that was on the sender's clock.
 */
static uint64_t acked_at;

static int64_t receiver_acks(struct pair *p, uint64_t sent_at, uint64_t one_way_ns, bool ce,
			     struct mrc_packet *ack)
{
	struct mrc_rx_info rx = { .plane = 0, .sport = p->tx.sport, .ce = ce };
	uint64_t now_b = sent_at + one_way_ns + CLOCK_OFFSET_NS;

	ck_assert_int_eq(mrc_conn_recv(p->b, &rx, p->buf, p->len, now_b), 0);
	if (!mrc_conn_send(p->b, p->buf, sizeof(p->buf), &p->tx, now_b, &p->len)) {
		now_b = mrc_conn_next_timeout(p->b);
		mrc_conn_on_timeout(p->b, now_b);
		ck_assert(mrc_conn_send(p->b, p->buf, sizeof(p->buf), &p->tx, now_b, &p->len));
	}
	acked_at = now_b - CLOCK_OFFSET_NS;
	ck_assert_int_eq(p->tx.opcode, MRC_OP_ACK);
	ck_assert_int_eq(mrc_decode(p->buf, p->len, ack), 0);
	return ack->u.ack.queue_delay_ns;
}

/* One data packet sent at t and its ACK: the queue_delay the ACK reports. */
static int64_t exchange(struct pair *p, uint64_t t, uint64_t one_way_ns, bool ce,
			struct mrc_packet *ack)
{
	sender_sends(p, t);
	return receiver_acks(p, t, one_way_ns, ce, ack);
}

/*
 * The receiver reports how much longer than its path's least a CE-marked packet took, whatever
 * the offset between the clocks and across the wrap of 2^32 ns, and 0 for an unmarked one.
 */
START_TEST(queue_delay__above_the_paths_least_when_ce_marked)
{
	struct pair p;
	struct mrc_packet ack;
	uint64_t t = SEND_AT_NS;

	pair_open(&p, 1, MRC_MODE_METAROCE);
	ck_assert_int_eq(exchange(&p, t, 3000, false, &ack), 0);
	t += 2000;
	/* the sender's clock passes 2^32 here */
	ck_assert_int_eq(exchange(&p, t, 3000 + 30000, true, &ack), 30000);
	ck_assert(ack.flags & MRC_F_ECE);
	t += 2000;
	ck_assert_int_eq(exchange(&p, t, 3000 + 12000, false, &ack), 0);
	pair_close(&p);
}
END_TEST

/*
 * A packet whose one-way delay reads 500 ms under the least (the sender's clock stepped, or a
 * packet held for over 2^31 ns) moves no base: the next packets still report what they queued.
 */
START_TEST(queue_delay__implausible_sample_moves_no_base)
{
	struct pair p;
	struct mrc_packet ack;
	uint64_t t = SEND_AT_NS;

	pair_open(&p, 1, MRC_MODE_METAROCE);
	ck_assert_int_eq(exchange(&p, t, 3000, false, &ack), 0);
	t += 1000;
	sender_sends(&p, t + 500000000); /* stamped 500 ms ahead */
	ck_assert_int_eq(receiver_acks(&p, t, 3000, true, &ack), 0);
	t += 1000;
	ck_assert_int_eq(exchange(&p, t, 3000 + 20000, true, &ack), 20000);
	pair_close(&p);
}
END_TEST

/*
 * The sender holds back for the reported delay, at most two of the echoed path's least RTTs,
 * and a later report moves the end only later, never adding to it.
 */
START_TEST(drain__holds_back_up_to_two_least_rtts)
{
	struct pair p;
	struct mrc_packet ack;
	struct mrc_rx_info rx = { .plane = 0, .sport = 50000 };
	uint64_t t = SEND_AT_NS, rtt = 10000;
	uint8_t ack_buf[9216];
	size_t ack_len;

	pair_open(&p, 1, MRC_MODE_METAROCE);
	/* a first round trip of 10 us, no queue: the path's least RTT */
	ck_assert_int_eq(exchange(&p, t, rtt / 2, false, &ack), 0);
	t = acked_at + rtt / 2;
	ck_assert_int_eq(mrc_conn_recv(p.a, &rx, p.buf, p.len, t), 0);
	ck_assert_uint_eq(mrc_conn_path(p.a, 0)->rtt.min_ns, rtt);
	/* then a packet that queued 8 us: held back 8 us from the ACK's arrival */
	ck_assert_int_eq(exchange(&p, t, rtt / 2 + 8000, true, &ack), 8000);
	t = acked_at + rtt / 2;
	ck_assert_int_eq(mrc_conn_recv(p.a, &rx, p.buf, p.len, t), 0);
	ck_assert_uint_eq(mrc_conn_next_timeout(p.a), t + 8000);
	ck_assert(!mrc_conn_send(p.a, ack_buf, sizeof(ack_buf), &p.tx, t + 7999, &ack_len));
	/* one that queued 50 us: held back 2 x 10 us only */
	t += 8000;
	ck_assert_int_eq(exchange(&p, t, rtt / 2 + 50000, true, &ack), 50000);
	t = acked_at + rtt / 2;
	ck_assert_int_eq(mrc_conn_recv(p.a, &rx, p.buf, p.len, t), 0);
	ck_assert_uint_eq(mrc_conn_next_timeout(p.a), t + 2 * rtt);
	/* the same ACK again, saying 3 us: that end stays where it is */
	ack.u.ack.queue_delay_ns = 3000;
	ck_assert_int_eq(mrc_encode(&ack, ack_buf, sizeof(ack_buf), &ack_len), MRC_WIRE_OK);
	ck_assert_int_eq(mrc_conn_recv(p.a, &rx, ack_buf, ack_len, t + 1000), 0);
	ck_assert_uint_eq(mrc_conn_next_timeout(p.a), t + 2 * rtt);
	pair_close(&p);
}
END_TEST

/* The baseline mode neither reports a queue nor holds back for one. */
START_TEST(drain__not_in_rocev2_mode)
{
	struct pair p;
	struct mrc_packet ack;
	uint64_t t = SEND_AT_NS;

	pair_open(&p, 1, MRC_MODE_ROCEV2);
	ck_assert_int_eq(exchange(&p, t, 3000, false, &ack), 0);
	t += 1000;
	ck_assert_int_eq(exchange(&p, t, 3000 + 30000, true, &ack), 0);
	pair_close(&p);
}
END_TEST

Suite *drain_suite(void)
{
	Suite *s = suite_create("drain");
	TCase *tc = tcase_create("drain");

	tcase_add_test(tc, queue_delay__above_the_paths_least_when_ce_marked);
	tcase_add_test(tc, queue_delay__implausible_sample_moves_no_base);
	tcase_add_test(tc, drain__holds_back_up_to_two_least_rtts);
	tcase_add_test(tc, drain__not_in_rocev2_mode);
	suite_add_tcase(s, tc);
	return s;
}
