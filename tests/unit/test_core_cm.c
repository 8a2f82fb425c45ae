/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The connection manager (SPEC 17) of two whole daemon cores in virtual time (core_world.h):
 * a client's rdma_cm requests as libmetaroce sends them, the events each core writes to its
 * client's channel, over networks that lose and duplicate: every event once, in order, with
 * what the peer said; refusals, a peer that vanishes, a client that dies, a deaf channel.
 */
#include <errno.h>
#include <string.h>

#include "core/cm.h"
#include "core_world.h"
#include "proto/cm.h"
#include "suites.h"

#define PORT 7174

static void addr_of(uint8_t a[16], unsigned host, unsigned plane)
{
	uint8_t v4[4] = { 198, 18, (uint8_t)plane, (uint8_t)(host + 1) };

	mrc_addr_from_v4(a, v4);
}

static int cm(struct host *h, struct mrc_ctl_cm *r, struct mrc_ctl_cm_reply *out)
{
	struct mrc_ctl_cm_reply ignored;

	return world_request(h, MRC_CTL_CM, r, sizeof(*r),
			     r->op == MRC_CM_OP_CHANNEL ? world_channel_fd : NULL,
			     out ? out : &ignored, sizeof(*out));
}

static uint32_t channel_new(struct host *h)
{
	struct mrc_ctl_cm r = { .op = MRC_CM_OP_CHANNEL };
	struct mrc_ctl_cm_reply out;

	ck_assert_int_eq(cm(h, &r, &out), 0);
	return out.handle;
}

static uint32_t id_new(struct host *h, uint32_t channel, uint8_t ps)
{
	struct mrc_ctl_cm r = { .op = MRC_CM_OP_CREATE_ID, .channel = channel, .port_space = ps };
	struct mrc_ctl_cm_reply out;

	ck_assert_int_eq(cm(h, &r, &out), 0);
	ck_assert_uint_ne(out.handle, 0);
	return out.handle;
}

static int bind_to(struct host *h, uint32_t id, const uint8_t addr[16], uint16_t port,
		   uint16_t *bound)
{
	struct mrc_ctl_cm r = { .op = MRC_CM_OP_BIND, .id = id, .port = port };
	struct mrc_ctl_cm_reply out;
	int err;

	if (addr)
		memcpy(r.addr, addr, 16);
	else
		mrc_addr_from_v4(r.addr, (uint8_t[4]){ 0, 0, 0, 0 });
	err = cm(h, &r, &out);
	if (!err && bound)
		*bound = out.port;
	return err;
}

static int simple(struct host *h, uint8_t op, uint32_t id, uint32_t arg)
{
	struct mrc_ctl_cm r = { .op = op, .id = id, .backlog = arg };

	return cm(h, &r, NULL);
}

/* --- waiting for events --------------------------------------------------------------------- */

static struct {
	unsigned host, chan, n;
} want;

static bool got_wanted(struct world *w)
{
	return w->h[want.host].chan[want.chan].n >= want.n;
}

/* Event number n (from 0) on the host's channel, after running at most `limit` for it. */
static const struct mrc_cm_event *event(struct world *w, unsigned host, unsigned chan,
					unsigned n, uint64_t limit)
{
	const struct cm_channel_log *log = &w->h[host].chan[chan];

	want.host = host;
	want.chan = chan;
	want.n = n + 1;
	world_run(w, limit, got_wanted, 0, NULL);
	ck_assert_msg(log->n > n, "host %u waited for event %u, has %u", host, n, log->n);
	ck_assert_uint_eq(log->ev[n].magic, MRC_CM_EVENT_MAGIC);
	return &log->ev[n];
}

static void expect(const struct mrc_cm_event *ev, uint32_t kind, int32_t status)
{
	ck_assert_msg(ev->kind == kind && ev->status == status, "event %u status %d, not %u %d",
		      ev->kind, ev->status, kind, status);
}

/* --- a connection -------------------------------------------------------------------------- */

struct conn {
	uint32_t listener, active, passive; /* ids: B's listener, A's, B's new one */
	uint32_t qpn_a, qpn_b;
	uint16_t port_a;
};

static const uint8_t hello[] = "hello";
static const uint8_t welcome[] = "welcome, A";

static uint32_t chan_a, chan_b;

static void setup(struct world *w, struct conn *k, uint8_t ps)
{
	struct host *a = &w->h[0], *b = &w->h[1];
	uint8_t addr[16];
	uint16_t port;

	chan_a = channel_new(a);
	chan_b = channel_new(b);
	k->listener = id_new(b, chan_b, ps);
	ck_assert_int_eq(bind_to(b, k->listener, NULL, PORT, &port), 0);
	ck_assert_uint_eq(port, PORT);
	ck_assert_int_eq(simple(b, MRC_CM_OP_LISTEN, k->listener, 4), 0);
	k->active = id_new(a, chan_a, ps);
	addr_of(addr, 0, 0);
	ck_assert_int_eq(bind_to(a, k->active, addr, 0, &k->port_a), 0);
	ck_assert_uint_ge(k->port_a, MRCD_CM_PORT_MIN);
	ck_assert_uint_le(k->port_a, MRCD_CM_PORT_MAX);
	{
		struct mrc_ctl_cm r = { .op = MRC_CM_OP_ROUTE, .id = k->active, .backlog = 2000 };

		addr_of(r.addr, 1, 0);
		ck_assert_int_eq(cm(a, &r, NULL), 0);
	}
	expect(event(w, 0, 0, 0, 3 * SEC), MRC_CM_EV_ROUTE_RESOLVED, 0);
	ck_assert_int_eq(world_create_rc_qp(a, a->cl.cq_handle, &k->qpn_a), 0);
	ck_assert_int_eq(world_create_rc_qp(b, b->cl.cq_handle, &k->qpn_b), 0);
}

static int connect_to(struct host *a, const struct conn *k, const void *priv, uint8_t len)
{
	struct mrc_ctl_cm r = { .op = MRC_CM_OP_CONNECT, .id = k->active, .port = PORT,
				.qpn = k->qpn_a, .responder_resources = 2, .initiator_depth = 3,
				.retry_count = 7, .rnr_retry_count = 6, .private_len = len };

	addr_of(r.addr, 1, 0);
	memcpy(r.private_data, priv, len);
	return cm(a, &r, NULL);
}

/* B's CONNECT_REQUEST (its event n), checked against what A sent; the new id. */
static uint32_t request_seen(struct world *w, const struct conn *k, unsigned n)
{
	const struct mrc_cm_event *ev = event(w, 1, 0, n, 10 * SEC);
	uint8_t addr[16];

	expect(ev, MRC_CM_EV_CONNECT_REQUEST, 0);
	ck_assert_uint_eq(ev->listen_id, k->listener);
	ck_assert_uint_ne(ev->id, k->listener);
	ck_assert_uint_eq(ev->remote_qpn, k->qpn_a);
	ck_assert_uint_eq(ev->private_len, sizeof(hello));
	ck_assert_mem_eq(ev->private_data, hello, sizeof(hello));
	ck_assert_uint_eq(ev->responder_resources, 2);
	ck_assert_uint_eq(ev->initiator_depth, 3);
	ck_assert_uint_eq(ev->retry_count, 7);
	ck_assert_uint_eq(ev->rnr_retry_count, 6);
	ck_assert_uint_eq(ev->local_port, PORT);
	ck_assert_uint_eq(ev->remote_port, k->port_a);
	addr_of(addr, 0, 0);
	ck_assert_mem_eq(ev->remote_addr, addr, 16);
	addr_of(addr, 1, 0);
	ck_assert_mem_eq(ev->local_addr, addr, 16);
	return ev->id;
}

static int accept_it(struct host *b, const struct conn *k, uint32_t qkey)
{
	struct mrc_ctl_cm r = { .op = MRC_CM_OP_ACCEPT, .id = k->passive, .qpn = k->qpn_b,
				.qkey = qkey, .responder_resources = 1, .initiator_depth = 1,
				.rnr_retry_count = 7, .private_len = sizeof(welcome) };

	memcpy(r.private_data, welcome, sizeof(welcome));
	return cm(b, &r, NULL);
}

/* Up to ESTABLISHED on both sides: A's events 1 and 2 done, B's 0 and 1. */
static void establish(struct world *w, struct conn *k)
{
	struct host *a = &w->h[0], *b = &w->h[1];
	const struct mrc_cm_event *ev;

	setup(w, k, MRC_CM_PS_TCP);
	ck_assert_int_eq(connect_to(a, k, hello, sizeof(hello)), 0);
	k->passive = request_seen(w, k, 0);
	ck_assert_int_eq(accept_it(b, k, 0), 0);
	ev = event(w, 0, 0, 1, 10 * SEC);
	expect(ev, MRC_CM_EV_CONNECT_RESPONSE, 0);
	ck_assert_uint_eq(ev->remote_qpn, k->qpn_b);
	ck_assert_uint_eq(ev->private_len, sizeof(welcome));
	ck_assert_mem_eq(ev->private_data, welcome, sizeof(welcome));
	ck_assert_uint_eq(ev->rnr_retry_count, 7);
	ck_assert_int_eq(simple(a, MRC_CM_OP_ESTABLISH, k->active, 0), 0);
	expect(event(w, 1, 0, 1, 10 * SEC), MRC_CM_EV_ESTABLISHED, 0);
}

static bool ids_gone(struct world *w)
{
	return w->h[0].core.cm->n_ids == 0 && w->h[1].core.cm->n_ids == 0;
}

/* Nothing more is told for `quiet`, and once the ids are destroyed both daemons let go. */
static void finish(struct world *w, const struct conn *k, unsigned n_a, unsigned n_b)
{
	world_run(w, 3 * SEC, NULL, 0, NULL);
	ck_assert_uint_eq(w->h[0].chan[0].n, n_a);
	ck_assert_uint_eq(w->h[1].chan[0].n, n_b);
	ck_assert_int_eq(simple(&w->h[0], MRC_CM_OP_DESTROY_ID, k->active, 0), 0);
	if (k->passive)
		ck_assert_int_eq(simple(&w->h[1], MRC_CM_OP_DESTROY_ID, k->passive, 0), 0);
	ck_assert_int_eq(simple(&w->h[1], MRC_CM_OP_DESTROY_ID, k->listener, 0), 0);
	ck_assert_int_eq(simple(&w->h[1], MRC_CM_OP_DESTROY_ID, k->listener, 0), -ENOENT);
	world_run(w, 10 * SEC, ids_gone, 0, NULL);
	ck_assert_uint_eq(w->h[0].core.cm->n_ids, 0);
	ck_assert_uint_eq(w->h[1].core.cm->n_ids, 0);
	ck_assert_uint_eq(w->h[0].core.cm->n_heap, 0);
	ck_assert_uint_eq(w->h[1].core.cm->n_heap, 0);
}

static void connect_and_disconnect(double loss, double duplicate, uint64_t seed)
{
	struct world w;
	struct conn k = { 0 };

	world_init(&w, seed);
	w.loss = loss;
	w.duplicate = duplicate;
	establish(&w, &k);
	ck_assert_int_eq(simple(&w.h[0], MRC_CM_OP_DISCONNECT, k.active, 0), 0);
	expect(event(&w, 1, 0, 2, 10 * SEC), MRC_CM_EV_DISCONNECTED, 0);
	expect(event(&w, 0, 0, 2, 10 * SEC), MRC_CM_EV_DISCONNECTED, 0);
	/* the passive side's own call after the peer went first changes nothing */
	ck_assert_int_eq(simple(&w.h[1], MRC_CM_OP_DISCONNECT, k.passive, 0), 0);
	finish(&w, &k, 3, 3);
	world_free(&w);
}

START_TEST(core_cm__connect_accept_disconnect)
{
	connect_and_disconnect(0, 0, 1);
}
END_TEST

START_TEST(core_cm__lossy_network_every_event_once)
{
	/* a tenth of the datagrams lost, a twentieth twice: a REQ, REP, RTU or DREQ may go
	 * missing or arrive again, and still each event comes exactly once */
	for (uint64_t seed = 10; seed < 18; seed++)
		connect_and_disconnect(0.10, 0.05, seed);
}
END_TEST

START_TEST(core_cm__both_ends_disconnect_at_once)
{
	struct world w;
	struct conn k = { 0 };

	world_init(&w, 3);
	establish(&w, &k);
	ck_assert_int_eq(simple(&w.h[0], MRC_CM_OP_DISCONNECT, k.active, 0), 0);
	ck_assert_int_eq(simple(&w.h[1], MRC_CM_OP_DISCONNECT, k.passive, 0), 0);
	expect(event(&w, 1, 0, 2, 10 * SEC), MRC_CM_EV_DISCONNECTED, 0);
	expect(event(&w, 0, 0, 2, 10 * SEC), MRC_CM_EV_DISCONNECTED, 0);
	finish(&w, &k, 3, 3);
	world_free(&w);
}
END_TEST

START_TEST(core_cm__nobody_listens)
{
	struct world w;
	struct conn k = { 0 };

	world_init(&w, 4);
	setup(&w, &k, MRC_CM_PS_TCP);
	ck_assert_int_eq(simple(&w.h[1], MRC_CM_OP_DESTROY_ID, k.listener, 0), 0);
	k.listener = id_new(&w.h[1], chan_b, MRC_CM_PS_TCP); /* another port space's port */
	ck_assert_int_eq(bind_to(&w.h[1], k.listener, NULL, PORT + 1, NULL), 0);
	ck_assert_int_eq(connect_to(&w.h[0], &k, hello, sizeof(hello)), 0);
	expect(event(&w, 0, 0, 1, 10 * SEC), MRC_CM_EV_REJECTED, MRC_CM_REJ_INVALID_SERVICE_ID);
	finish(&w, &k, 2, 0);
	world_free(&w);
}
END_TEST

START_TEST(core_cm__listener_rejects_with_private_data)
{
	static const uint8_t why[] = "go away";
	struct world w;
	struct conn k = { 0 };
	struct mrc_ctl_cm r = { .op = MRC_CM_OP_REJECT, .private_len = sizeof(why) };
	const struct mrc_cm_event *ev;

	world_init(&w, 5);
	w.duplicate = 0.3; /* a duplicate REQ after the REJ hears the REJ again */
	setup(&w, &k, MRC_CM_PS_TCP);
	ck_assert_int_eq(connect_to(&w.h[0], &k, hello, sizeof(hello)), 0);
	k.passive = request_seen(&w, &k, 0);
	r.id = k.passive;
	memcpy(r.private_data, why, sizeof(why));
	ck_assert_int_eq(cm(&w.h[1], &r, NULL), 0);
	ev = event(&w, 0, 0, 1, 10 * SEC);
	expect(ev, MRC_CM_EV_REJECTED, MRC_CM_REJ_CONSUMER_DEFINED);
	ck_assert_uint_eq(ev->private_len, sizeof(why));
	ck_assert_mem_eq(ev->private_data, why, sizeof(why));
	/* a rejected request can be neither accepted nor rejected again */
	ck_assert_int_eq(accept_it(&w.h[1], &k, 0), -EINVAL);
	finish(&w, &k, 2, 1);
	world_free(&w);
}
END_TEST

START_TEST(core_cm__peer_daemon_gone)
{
	struct world w;
	struct conn k = { 0 };

	world_init(&w, 6);
	establish(&w, &k);
	world_host_crash(&w, 1);
	/* the DREQ goes unanswered: the connection ends all the same, after the retries */
	ck_assert_int_eq(simple(&w.h[0], MRC_CM_OP_DISCONNECT, k.active, 0), 0);
	expect(event(&w, 0, 0, 2, 10 * SEC), MRC_CM_EV_DISCONNECTED, 0);
	ck_assert_uint_ge(w.h[0].core.cm->stats.retransmits, MRCD_CM_TRIES - 1);
	ck_assert_int_eq(simple(&w.h[0], MRC_CM_OP_DESTROY_ID, k.active, 0), 0);
	world_run(&w, MRCD_CM_TIMEWAIT_NS + SEC, NULL, 0, NULL); /* its time-wait, then gone */
	ck_assert_uint_eq(w.h[0].core.cm->n_ids, 0);
	world_free(&w);
}
END_TEST

START_TEST(core_cm__unanswered_request_is_unreachable)
{
	struct world w;
	struct conn k = { 0 };

	world_init(&w, 7);
	setup(&w, &k, MRC_CM_PS_TCP);
	world_host_crash(&w, 1);
	ck_assert_int_eq(connect_to(&w.h[0], &k, hello, sizeof(hello)), 0);
	expect(event(&w, 0, 0, 1, 10 * SEC), MRC_CM_EV_UNREACHABLE, -ETIMEDOUT);
	ck_assert_uint_eq(w.h[0].core.cm->stats.timeouts, 1);
	world_free(&w);
}
END_TEST

START_TEST(core_cm__dead_client_disconnects_its_peer)
{
	struct world w;
	struct conn k = { 0 };

	world_init(&w, 8);
	establish(&w, &k);
	world_client_close(&w.h[0]);
	expect(event(&w, 1, 0, 2, 10 * SEC), MRC_CM_EV_DISCONNECTED, 0);
	world_run(&w, 5 * SEC, NULL, 0, NULL);
	ck_assert_uint_eq(w.h[0].core.cm->n_ids, 0); /* its DREQ answered, nothing kept */
	ck_assert_uint_eq(w.h[0].core.cm->n_channels, 0);
	world_free(&w);
}
END_TEST

START_TEST(core_cm__datagram_port_space)
{
	struct world w;
	struct conn k = { 0 };
	struct mrc_ctl_cm r = { .op = MRC_CM_OP_CONNECT, .port = PORT, .private_len = 3 };
	const struct mrc_cm_event *ev;

	world_init(&w, 9);
	setup(&w, &k, MRC_CM_PS_UDP);
	r.id = k.active;
	addr_of(r.addr, 1, 0);
	memcpy(r.private_data, "abc", 3);
	ck_assert_int_eq(cm(&w.h[0], &r, NULL), 0);
	ev = event(&w, 1, 0, 0, 10 * SEC);
	expect(ev, MRC_CM_EV_CONNECT_REQUEST, 0);
	ck_assert_uint_eq(ev->private_len, 3);
	k.passive = ev->id;
	ck_assert_int_eq(accept_it(&w.h[1], &k, 0x1234567), 0);
	ev = event(&w, 0, 0, 1, 10 * SEC);
	expect(ev, MRC_CM_EV_ESTABLISHED, 0);
	ck_assert_uint_eq(ev->remote_qpn, k.qpn_b);
	ck_assert_uint_eq(ev->qkey, 0x1234567);
	ck_assert_mem_eq(ev->private_data, welcome, sizeof(welcome));
	finish(&w, &k, 2, 1);
	world_free(&w);
}
END_TEST

START_TEST(core_cm__requests_refused_by_name)
{
	struct world w;
	struct host *a;
	uint32_t ch, id, other;
	uint8_t addr[16];
	struct mrc_ctl_cm r = { .op = MRC_CM_OP_CREATE_ID };

	world_init(&w, 11);
	a = &w.h[0];
	ch = channel_new(a);
	r.channel = ch;
	r.port_space = 0x42;
	ck_assert_int_eq(cm(a, &r, NULL), -EPROTONOSUPPORT);
	r.channel = ch + 1;
	r.port_space = MRC_CM_PS_TCP;
	ck_assert_int_eq(cm(a, &r, NULL), -ENOENT);
	id = id_new(a, ch, MRC_CM_PS_TCP);
	other = id_new(a, ch, MRC_CM_PS_TCP);
	addr_of(addr, 1, 0); /* the peer's address is not this daemon's */
	ck_assert_int_eq(bind_to(a, id, addr, 0, NULL), -EADDRNOTAVAIL);
	addr_of(addr, 0, 1);
	ck_assert_int_eq(bind_to(a, id, addr, PORT, NULL), 0);
	ck_assert_int_eq(bind_to(a, id, addr, PORT, NULL), -EINVAL); /* bound already */
	ck_assert_int_eq(bind_to(a, other, NULL, PORT, NULL), -EADDRINUSE);
	ck_assert_int_eq(simple(a, MRC_CM_OP_ACCEPT, id, 0), -EINVAL);
	ck_assert_int_eq(simple(a, MRC_CM_OP_CONNECT, id, 0), -EINVAL); /* not routed */
	ck_assert_int_eq(simple(a, MRC_CM_OP_ESTABLISH, id, 0), -EINVAL);
	ck_assert_int_eq(simple(a, MRC_CM_OP_DISCONNECT, id, 0), -EINVAL);
	ck_assert_int_eq(simple(a, 99, id, 0), -EINVAL);
	ck_assert_int_eq(simple(a, MRC_CM_OP_LISTEN, id + 1, 0), -ENOENT);
	/* a channel ids use stays */
	r = (struct mrc_ctl_cm){ .op = MRC_CM_OP_CLOSE_CHANNEL, .channel = ch };
	ck_assert_int_eq(cm(a, &r, NULL), -EBUSY);
	/* another client's id is not there for this one */
	ck_assert_int_eq(simple(&w.h[1], MRC_CM_OP_DESTROY_ID, id, 0), -ENOENT);
	ck_assert_int_eq(simple(a, MRC_CM_OP_DESTROY_ID, id, 0), 0);
	ck_assert_int_eq(simple(a, MRC_CM_OP_DESTROY_ID, other, 0), 0);
	ck_assert_int_eq(cm(a, &r, NULL), 0);
	ck_assert_uint_eq(a->core.cm->n_ids, 0);
	ck_assert_uint_eq(a->core.cm->n_channels, 0);
	world_free(&w);
}
END_TEST

START_TEST(core_cm__deaf_channel_keeps_events_in_order)
{
	struct world w;
	struct conn k = { 0 };

	world_init(&w, 12);
	setup(&w, &k, MRC_CM_PS_TCP);
	w.h[1].chan[0].deaf = true;
	ck_assert_int_eq(connect_to(&w.h[0], &k, hello, sizeof(hello)), 0);
	world_run(&w, 1 * SEC, NULL, 0, NULL);
	ck_assert_uint_eq(w.h[1].chan[0].n, 0);
	ck_assert_uint_eq(w.h[1].core.cm->channels[0].n_pending, 1); /* its first, kept */
	w.h[1].chan[0].deaf = false;
	k.passive = request_seen(&w, &k, 0);
	ck_assert_int_eq(accept_it(&w.h[1], &k, 0), 0);
	expect(event(&w, 0, 0, 1, 10 * SEC), MRC_CM_EV_CONNECT_RESPONSE, 0);
	world_free(&w);
}
END_TEST

START_TEST(core_cm__migrated_id_takes_its_waiting_events)
{
	struct world w;
	struct conn k = { 0 };
	struct mrc_ctl_cm r = { .op = MRC_CM_OP_MIGRATE };
	uint32_t other;

	world_init(&w, 13);
	setup(&w, &k, MRC_CM_PS_TCP);
	w.h[0].chan[0].deaf = true; /* the CONNECT_RESPONSE waits in the daemon */
	ck_assert_int_eq(connect_to(&w.h[0], &k, hello, sizeof(hello)), 0);
	k.passive = request_seen(&w, &k, 0);
	ck_assert_int_eq(accept_it(&w.h[1], &k, 0), 0);
	world_run(&w, 1 * SEC, NULL, 0, NULL);
	ck_assert_uint_eq(w.h[0].core.cm->channels[0].n_pending, 1);
	other = channel_new(&w.h[0]);
	r.id = k.active;
	r.channel = other;
	ck_assert_int_eq(cm(&w.h[0], &r, NULL), 0);
	/* as the kernel's: it is on the new channel, and the old one holds nothing more */
	expect(event(&w, 0, 1, 0, 1 * SEC), MRC_CM_EV_CONNECT_RESPONSE, 0);
	ck_assert_uint_eq(w.h[0].core.cm->channels[0].n_pending, 0);
	ck_assert_uint_eq(w.h[0].chan[0].n, 1); /* ROUTE_RESOLVED, before it went deaf */
	world_free(&w);
}
END_TEST

START_TEST(core_cm__closed_channel_is_offered_nothing_more)
{
	struct world w;
	struct conn k = { 0 };

	world_init(&w, 14);
	setup(&w, &k, MRC_CM_PS_TCP);
	w.h[1].chan[0].gone = true; /* the listener's reader closed its end */
	ck_assert_int_eq(connect_to(&w.h[0], &k, hello, sizeof(hello)), 0);
	world_run(&w, 2 * SEC, NULL, 0, NULL);
	ck_assert_uint_eq(w.h[1].core.cm->channels[0].n_pending, 0);
	ck_assert_uint_eq(w.h[1].core.cm->n_blocked, 0); /* nothing retried every millisecond */
	ck_assert(w.h[1].core.cm->channels[0].gone);
	world_free(&w);
}
END_TEST

Suite *core_cm_suite(void)
{
	Suite *s = suite_create("core_cm");
	TCase *tc = tcase_create("core_cm");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, core_cm__connect_accept_disconnect);
	tcase_add_test(tc, core_cm__lossy_network_every_event_once);
	tcase_add_test(tc, core_cm__both_ends_disconnect_at_once);
	tcase_add_test(tc, core_cm__nobody_listens);
	tcase_add_test(tc, core_cm__listener_rejects_with_private_data);
	tcase_add_test(tc, core_cm__peer_daemon_gone);
	tcase_add_test(tc, core_cm__unanswered_request_is_unreachable);
	tcase_add_test(tc, core_cm__dead_client_disconnects_its_peer);
	tcase_add_test(tc, core_cm__datagram_port_space);
	tcase_add_test(tc, core_cm__requests_refused_by_name);
	tcase_add_test(tc, core_cm__deaf_channel_keeps_events_in_order);
	tcase_add_test(tc, core_cm__migrated_id_takes_its_waiting_events);
	tcase_add_test(tc, core_cm__closed_channel_is_offered_nothing_more);
	suite_add_tcase(s, tc);
	return s;
}
