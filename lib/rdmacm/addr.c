/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Addresses between rdma_cm's sockaddrs and the daemon's 16-byte form, and the route's path. */
#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "rdmacm/internal.h"

int mrcm_addr_from(const struct sockaddr *sa, uint8_t addr[16], uint16_t *port)
{
	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *in = (const struct sockaddr_in *)sa;

		mrc_addr_from_v4(addr, &in->sin_addr);
		*port = ntohs(in->sin_port);
		return 0;
	}
	if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)sa;

		memcpy(addr, &in6->sin6_addr, 16);
		*port = ntohs(in6->sin6_port);
		return 0;
	}
	errno = EAFNOSUPPORT; /* AF_IB: InfiniBand addressing, which no plane has */
	return -1;
}

void mrcm_addr_to(struct sockaddr_storage *ss, const uint8_t addr[16], uint16_t port,
		  bool v6_family)
{
	memset(ss, 0, sizeof(*ss));
	if (mrc_addr_is_v4(addr) && !v6_family) {
		struct sockaddr_in *in = (struct sockaddr_in *)ss;

		in->sin_family = AF_INET;
		memcpy(&in->sin_addr, addr + 12, 4);
		in->sin_port = htons(port);
		return;
	}
	{
		struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ss;

		in6->sin6_family = AF_INET6;
		memcpy(&in6->sin6_addr, addr, 16);
		in6->sin6_port = htons(port);
	}
}

bool mrcm_addr_any(const uint8_t addr[16])
{
	static const uint8_t v4_any[16] = { [10] = 0xff, [11] = 0xff };
	static const uint8_t v6_any[16];

	return !memcmp(addr, v4_any, 16) || !memcmp(addr, v6_any, 16);
}

int mrcm_gid_index(struct ibv_context *verbs, const uint8_t addr[16])
{
	const struct mrv_context *ctx = to_ctx(verbs);

	for (unsigned i = 0; i < ctx->status.n_planes && i < 16; i++)
		if (!memcmp(ctx->status.planes[i].addr, addr, 16))
			return (int)i;
	return -1;
}

void mrcm_fill_path(struct mrcm_id *p)
{
	struct rdma_route *route = &p->id.route;
	struct ibv_sa_path_rec *rec = &p->path;
	uint8_t src[16], dst[16];
	uint16_t port;

	memset(rec, 0, sizeof(*rec));
	if (!mrcm_addr_from(&route->addr.src_addr, src, &port))
		memcpy(rec->sgid.raw, src, 16);
	if (!mrcm_addr_from(&route->addr.dst_addr, dst, &port))
		memcpy(rec->dgid.raw, dst, 16);
	route->addr.addr.ibaddr.sgid = rec->sgid;
	route->addr.addr.ibaddr.dgid = rec->dgid;
	route->addr.addr.ibaddr.pkey = htons(0xffff);
	rec->pkey = htons(0xffff);
	rec->hop_limit = 64;
	rec->reversible = 1;
	rec->numb_path = 1;
	rec->mtu_selector = 2; /* exactly */
	rec->mtu = mrv_active_mtu(to_ctx(p->id.verbs));
	rec->rate_selector = 2;
	rec->rate = IBV_RATE_100_GBPS;
	rec->packet_life_time_selector = 2;
	rec->packet_life_time = 14;
	rec->traffic_class = p->tos;
	if (!route->path_rec)
		route->path_rec = malloc(sizeof(*route->path_rec));
	if (route->path_rec) {
		*route->path_rec = *rec;
		route->num_paths = 1;
	}
}
