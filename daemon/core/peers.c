/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The peer table's side of the core (lib/proto/peer.c does discovery itself): what this node
 * tells peers about itself, who may discover it, the DISCOVER packets it sends, and a lookup
 * by address for a QP that names a peer.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "core/internal.h"

/* IP and UDP headers before the MetaRoCE header, on the largest header of any plane, and
 * the authentication trailer behind the payload. */
static uint16_t max_payload(const struct mrcd_core *c)
{
	const struct mrcd_config *cfg = c->cfg;
	unsigned ip = 20;

	for (unsigned i = 0; i < cfg->n_planes; i++)
		if (cfg->planes[i].addr.family == MRC_AF_INET6)
			ip = 40;
	return (uint16_t)(cfg->mtu - ip - 8 - sizeof(struct mrc_hdr) - sizeof(struct mrc_data_ext) -
			  (!c->auth			     ? 0
			   : c->auth->mode == MRC_AUTH_FULL ? sizeof(struct mrc_seal_trailer)
							    : MRC_AUTH_TAG_LEN));
}

void core_node_info(const struct mrcd_core *c, uint64_t node_id, struct mrc_node_info *info)
{
	memset(info, 0, sizeof(*info));
	info->node_id = node_id;
	info->udp_port = c->port;
	info->max_payload = max_payload(c);
	info->n_addrs = c->cfg->n_planes;
	for (unsigned i = 0; i < c->cfg->n_planes; i++) {
		info->addrs[i].family = c->cfg->planes[i].addr.family;
		info->addrs[i].plane = c->cfg->planes[i].index;
		memcpy(info->addrs[i].addr, c->cfg->planes[i].addr.addr, 16);
	}
}

uint32_t core_shared_planes(const struct mrcd_core *c, const struct mrc_node_info *info,
			    uint8_t (*addr)[16])
{
	uint32_t planes = 0;

	for (unsigned i = 0; i < c->cfg->n_planes; i++) {
		const struct mrcd_plane *p = &c->cfg->planes[i];

		for (unsigned k = 0; k < info->n_addrs; k++) {
			const struct mrc_plane_rec *a = &info->addrs[k];

			if (a->plane != p->index || a->family != p->addr.family ||
			    (a->flags & MRC_PLANE_F_DRAINED))
				continue;
			planes |= 1u << p->index;
			if (addr)
				memcpy(addr[p->index], a->addr, 16);
		}
	}
	return planes;
}

bool core_admit(void *user, const uint8_t addr[16])
{
	struct mrcd_core *c = user;

	return mrcd_config_admits(c->cfg, addr);
}

/* An address as text, without the C library's network functions: the core does no I/O. */
const char *core_addr_str(const uint8_t a[16], char *buf, size_t len)
{
	if (mrc_addr_is_v4(a))
		snprintf(buf, len, "%u.%u.%u.%u", a[12], a[13], a[14], a[15]);
	else
		snprintf(buf, len, "%x:%x:%x:%x:%x:%x:%x:%x", a[0] << 8 | a[1], a[2] << 8 | a[3],
			 a[4] << 8 | a[5], a[6] << 8 | a[7], a[8] << 8 | a[9], a[10] << 8 | a[11],
			 a[12] << 8 | a[13], a[14] << 8 | a[15]);
	return buf;
}

static const struct mrcd_plane *plane_for(const struct mrcd_config *cfg, const uint8_t addr[16])
{
	/* the plane whose subnet (/24, /64) holds the address; else the first */
	for (unsigned i = 0; i < cfg->n_planes; i++) {
		const struct mrcd_addr *a = &cfg->planes[i].addr;
		unsigned bytes = a->family == MRC_AF_INET ? 15 : 8;

		if (!memcmp(a->addr, addr, bytes))
			return &cfg->planes[i];
	}
	return &cfg->planes[0];
}

int mrcd_core_discover(struct mrcd_core *c, const struct mrcd_addr *addr, uint64_t now)
{
	c->now = now;
	const struct mrcd_plane *p = plane_for(c->cfg, addr->addr);

	int idx = mrc_peer_table_lookup(&c->peers, addr->addr, p->index, c->cfg->port, now);

	return idx < 0 ? idx : 0;
}

int core_discover_addr(struct mrcd_core *c, const uint8_t addr[16], uint64_t now)
{
	struct mrcd_addr a = { .family = mrc_addr_family(addr) };

	if (!mrcd_config_admits(c->cfg, addr))
		return -EHOSTUNREACH; /* not a peer this daemon may talk to */
	memcpy(a.addr, addr, 16);
	switch (mrcd_core_discover(c, &a, now)) {
	case 0:
		return 0;
	case -EACCES:
		return -EACCES; /* no allowed peer's key may answer there */
	default:
		return -ENOMEM;
	}
}

void core_send_daemon_packets(struct mrcd_core *c, uint64_t now)
{
	uint8_t buf[1024];
	struct mrc_peer_dest dest;
	size_t len;

	while (mrc_peer_table_send(&c->peers, buf, sizeof(buf), &dest, now, &len)) {
		struct mrcd_dgram g = { .data = buf, .len = (uint32_t)len, .plane = dest.plane,
					.peer_port = dest.port };
		uint16_t sports[1] = { 0 };

		memcpy(g.peer.addr, dest.addr, 16);
		g.peer.family = mrc_addr_family(dest.addr);
		c->ops->sports(c->io, MRCD_CONTROL_SHARD, dest.plane, sports, 1);
		g.sport = sports[0];
		bool sent;

		if (c->ops->tx(c->io, MRCD_CONTROL_SHARD, &g, 1, &sent) == 1)
			c->stats.tx_datagrams++;
	}
}
