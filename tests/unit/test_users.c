/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * daemon/core/users.c: what one uid may hold is counted over all its connections, refused
 * past the configured limit with a reason the log names, given back as objects go; root and
 * the daemon's own user are not limited; each user sees only its own line [issue 20].
 */
#include <errno.h>
#include <string.h>

#include <metaroce/ctl.h>

#include "core/internal.h"
#include "core_world.h"
#include "suites.h"

#define USER 1000u

START_TEST(users__limits_count_every_connection_of_a_user)
{
	static struct world w;
	static uint8_t buf[MRC_CTL_MAX_MSG];
	struct host *h;
	struct mrcd_core *c;
	uint64_t usage[MRC_CTL_USER_RESOURCES];
	struct mrc_ctl_user u;
	const uint32_t user = USER, root = 0;
	uint32_t qpn, qpn2;
	int second, third, root_conn;

	world_init(&w, 91);
	h = &w.h[0];
	c = &h->core;
	/* the world's library client becomes an ordinary user's */
	c->t.client[h->cl.slot].uid = USER;
	core_user_usage(c, USER, usage);
	ck_assert_uint_eq(usage[MRC_CTL_USER_CONNECTIONS], 1);
	ck_assert_uint_eq(usage[MRC_CTL_USER_QPS], QPS);
	ck_assert_uint_gt(usage[MRC_CTL_USER_REGISTERED], 0);

	/* a second connection of the same user counts towards the same limits */
	h->cfg.user.connections = 2;
	second = mrcd_core_client_open(c, 7001, USER, w.now);
	ck_assert_int_ge(second, 0);
	third = mrcd_core_client_open(c, 7002, USER, w.now);
	ck_assert_int_eq(third, -EUSERS);
	root_conn = mrcd_core_client_open(c, 7003, 0, w.now); /* root is not limited */
	ck_assert_int_ge(root_conn, 0);
	ck_assert_int_ge(mrcd_core_client_open(c, 7004, c->operator_uid, w.now), 0);

	/* QPs: one more, then the limit; one destroyed gives its place back */
	h->cfg.user.qps = QPS + 1;
	ck_assert_int_eq(world_create_rc_qp(h, h->cl.cq_handle, &qpn), 0);
	ck_assert_int_eq(world_create_rc_qp(h, h->cl.cq_handle, &qpn2), -EDQUOT);
	ck_assert_uint_eq(c->stats.user_refusals, 2);
	{
		struct mrc_ctl_handle d = { .handle = qpn };

		ck_assert_int_eq(world_request(h, MRC_CTL_DESTROY_QP, &d, sizeof(d), NULL, NULL, 0),
				 0);
	}
	ck_assert_int_eq(world_create_rc_qp(h, h->cl.cq_handle, &qpn2), 0);

	/* bytes of regions, against a configured ceiling */
	core_user_usage(c, USER, usage);
	h->cfg.user.registered_bytes = usage[MRC_CTL_USER_REGISTERED] + 4096;
	ck_assert_int_eq(core_user_allows(c, USER, MRC_CTL_USER_REGISTERED, 4096), 0);
	ck_assert_int_eq(core_user_allows(c, USER, MRC_CTL_USER_REGISTERED, 8192), -EDQUOT);
	ck_assert_int_eq(core_user_allows(c, 0, MRC_CTL_USER_REGISTERED, 1ull << 62), 0);

	/* each user sees its own line; an operator every user's */
	ck_assert_uint_eq(mrcd_core_users_reply(c, &user, buf, sizeof(buf)), sizeof(u));
	memcpy(&u, buf, sizeof(u));
	ck_assert_uint_eq(u.uid, USER);
	ck_assert_uint_eq(u.limited, 1);
	ck_assert_uint_eq(u.used[MRC_CTL_USER_CONNECTIONS], 2);
	ck_assert_uint_eq(u.limit[MRC_CTL_USER_CONNECTIONS], 2);
	ck_assert_uint_eq(u.used[MRC_CTL_USER_QPS], QPS + 1);
	ck_assert_uint_eq(u.limit[MRC_CTL_USER_QPS], QPS + 1);
	ck_assert_uint_eq(mrcd_core_users_reply(c, &root, buf, sizeof(buf)), sizeof(u));
	memcpy(&u, buf, sizeof(u));
	ck_assert_uint_eq(u.uid, 0);
	ck_assert_uint_eq(u.limited, 0);
	ck_assert_uint_eq(mrcd_core_users_reply(c, NULL, buf, sizeof(buf)), 3 * sizeof(u));

	/* the second connection gone, the user may open another */
	mrcd_core_client_close(c, (unsigned)second, w.now);
	ck_assert_int_ge(mrcd_core_client_open(c, 7005, USER, w.now), 0);
	world_free(&w);
}
END_TEST

Suite *users_suite(void)
{
	Suite *s = suite_create("users");
	TCase *t = tcase_create("users");

	tcase_add_test(t, users__limits_count_every_connection_of_a_user);
	suite_add_tcase(s, t);
	return s;
}
