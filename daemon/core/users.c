/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * What one user (uid) may hold over all its control connections: connections, QPs, CQs,
 * regions and windows, SRQs, bytes of regions (the daemon maps them: sparse terabytes would
 * fill its address space) and XDP page maps. Limits per connection alone let a user open
 * more connections for more of everything. Root and the daemon's own user, the operators,
 * are not limited. The sums are taken over the client table when a request asks for more,
 * never per turn.
 */
#include <errno.h>
#include <string.h>

#include "core/internal.h"

/* the configuration keys, which the log names */
static const char *const names[MRC_CTL_USER_RESOURCES] = {
	[MRC_CTL_USER_CONNECTIONS] = "user_max_connections",
	[MRC_CTL_USER_QPS] = "user_max_qps",
	[MRC_CTL_USER_CQS] = "user_max_cqs",
	[MRC_CTL_USER_MRS] = "user_max_mrs",
	[MRC_CTL_USER_SRQS] = "user_max_srqs",
	[MRC_CTL_USER_REGISTERED] = "user_max_registered",
	[MRC_CTL_USER_PAGE_MAPS] = "user_max_page_maps",
};

bool core_user_exempt(const struct mrcd_core *c, uint32_t uid)
{
	return uid == 0 || uid == c->operator_uid;
}

void core_user_usage(const struct mrcd_core *c, uint32_t uid,
		     uint64_t usage[MRC_CTL_USER_RESOURCES])
{
	memset(usage, 0, sizeof(uint64_t) * MRC_CTL_USER_RESOURCES);
	for (unsigned i = 0; i < MRCD_MAX_CLIENTS; i++) {
		const struct mrcd_client *cl = &c->t.client[i];

		if (!cl->open || cl->uid != uid)
			continue;
		usage[MRC_CTL_USER_CONNECTIONS]++;
		usage[MRC_CTL_USER_QPS] += cl->n_qps;
		usage[MRC_CTL_USER_CQS] += cl->n_cqs;
		usage[MRC_CTL_USER_MRS] += cl->n_mrs + cl->n_mws;
		usage[MRC_CTL_USER_SRQS] += cl->n_srqs;
		usage[MRC_CTL_USER_REGISTERED] += cl->registered_bytes;
		usage[MRC_CTL_USER_PAGE_MAPS] += cl->page_bytes;
	}
}

void core_user_limits(const struct mrcd_core *c, uint64_t limits[MRC_CTL_USER_RESOURCES])
{
	const struct mrcd_user_limits *l = &c->cfg->user;

	limits[MRC_CTL_USER_CONNECTIONS] = l->connections;
	limits[MRC_CTL_USER_QPS] = l->qps;
	limits[MRC_CTL_USER_CQS] = l->cqs;
	limits[MRC_CTL_USER_MRS] = l->mrs;
	limits[MRC_CTL_USER_SRQS] = l->srqs;
	limits[MRC_CTL_USER_REGISTERED] = l->registered_bytes ? l->registered_bytes
							   : c->registered_auto;
	limits[MRC_CTL_USER_PAGE_MAPS] = l->page_map_bytes ? l->page_map_bytes : c->page_map_quota;
}

int core_user_allows(struct mrcd_core *c, uint32_t uid, enum mrc_ctl_user_resource what,
		     uint64_t more)
{
	uint64_t usage[MRC_CTL_USER_RESOURCES], limits[MRC_CTL_USER_RESOURCES];

	if (core_user_exempt(c, uid))
		return 0;
	core_user_usage(c, uid, usage);
	core_user_limits(c, limits);
	if (usage[what] + more <= limits[what])
		return 0;
	c->stats.user_refusals++;
	/* said once a second at most: a client retrying in a loop must not flood the log */
	if (c->now >= c->next_user_refusal_log_ns) {
		c->next_user_refusal_log_ns = c->now + 1000000000ull;
		core_log(c, MRCD_WARNING, "uid %u refused: it holds %llu of %s = %llu", uid,
			 (unsigned long long)usage[what], names[what],
			 (unsigned long long)limits[what]);
	}
	return what == MRC_CTL_USER_CONNECTIONS ? -EUSERS : -EDQUOT;
}

size_t mrcd_core_users_reply(const struct mrcd_core *c, const uint32_t *viewer, uint8_t *buf,
			     size_t cap)
{
	size_t n = 0;

	for (unsigned i = 0; i < MRCD_MAX_CLIENTS; i++) {
		const struct mrcd_client *cl = &c->t.client[i];
		uint64_t usage[MRC_CTL_USER_RESOURCES], limits[MRC_CTL_USER_RESOURCES];
		struct mrc_ctl_user out;
		bool listed = false;

		if (!cl->open || (viewer && cl->uid != *viewer))
			continue;
		for (unsigned k = 0; k < i && !listed; k++)
			listed = c->t.client[k].open && c->t.client[k].uid == cl->uid;
		if (listed || n + sizeof(out) > cap)
			continue;
		core_user_usage(c, cl->uid, usage);
		core_user_limits(c, limits);
		memset(&out, 0, sizeof(out));
		out.uid = cl->uid;
		out.limited = !core_user_exempt(c, cl->uid);
		for (unsigned r = 0; r < MRC_CTL_USER_RESOURCES; r++) {
			out.used[r] = usage[r];
			out.limit[r] = limits[r];
		}
		memcpy(buf + n, &out, sizeof(out));
		n += sizeof(out);
	}
	return n;
}
