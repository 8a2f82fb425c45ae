/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * UCX's own API over whatever device UCX picks (under metaroce-run: metaroce0), every byte
 * checked, which ucx_perftest does not do: tagged messages of many sizes echoed back, and
 * one-sided puts into the server's memory read back with gets. The two sides meet over TCP to
 * swap worker addresses, and the server's region key.
 *
 *   ucp_check -p PORT                    server
 *   ucp_check -p PORT -n ROUNDS HOST     client; exit 0 when every byte was right
 */
#include <netdb.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <ucp/api/ucp.h>

#define REGION (4u << 20)
#define DONE_TAG 0xd0e
static const size_t sizes[] = { 1, 8, 100, 4096, 4097, 65536, 200003, 1u << 20 };
#define N_SIZES (sizeof(sizes) / sizeof(sizes[0]))

static ucp_worker_h worker;

static void die(const char *what, ucs_status_t st)
{
	fprintf(stderr, "ucp_check: %s: %s\n", what, ucs_status_string(st));
	exit(2);
}

/* Progresses the worker until the request (or immediate status) is done. */
static ucs_status_t wait_for(ucs_status_ptr_t req)
{
	ucs_status_t st;

	if (req == NULL)
		return UCS_OK;
	if (UCS_PTR_IS_ERR(req))
		return UCS_PTR_STATUS(req);
	while ((st = ucp_request_check_status(req)) == UCS_INPROGRESS)
		ucp_worker_progress(worker);
	ucp_request_free(req);
	return st;
}

static void fill(uint8_t *p, size_t n, uint32_t seed)
{
	uint32_t x = seed * 2654435761u + 1;

	for (size_t i = 0; i < n; i++) {
		x = x * 1103515245u + 12345u;
		p[i] = (uint8_t)(x >> 16);
	}
}

static int xfer_all(int fd, void *buf, size_t n, int sending)
{
	uint8_t *p = buf;

	while (n) {
		ssize_t k = sending ? send(fd, p, n, MSG_NOSIGNAL) : recv(fd, p, n, 0);

		if (k <= 0)
			return -1;
		p += k;
		n -= (size_t)k;
	}
	return 0;
}

/* One length-prefixed blob each way: ours out, theirs in (malloc'd). */
static void *swap_blob(int fd, const void *mine, uint64_t len, uint64_t *their_len)
{
	void *theirs;

	if (xfer_all(fd, &len, sizeof(len), 1) || xfer_all(fd, (void *)mine, len, 1) ||
	    xfer_all(fd, their_len, sizeof(*their_len), 0) || *their_len > (1u << 20))
		die("address exchange", UCS_ERR_IO_ERROR);
	theirs = malloc(*their_len);
	if (!theirs || xfer_all(fd, theirs, *their_len, 0))
		die("address exchange", UCS_ERR_IO_ERROR);
	return theirs;
}

static int meet(const char *host, const char *port)
{
	struct addrinfo hints = { .ai_family = AF_INET, .ai_socktype = SOCK_STREAM,
				  .ai_flags = host ? 0 : AI_PASSIVE },
			*ai;
	int fd, one = 1;

	if (getaddrinfo(host, port, &hints, &ai))
		die("getaddrinfo", UCS_ERR_INVALID_ADDR);
	fd = socket(ai->ai_family, ai->ai_socktype, 0);
	if (fd < 0)
		die("socket", UCS_ERR_IO_ERROR);
	if (host) {
		for (int i = 0; connect(fd, ai->ai_addr, ai->ai_addrlen); i++) {
			if (i == 100)
				die("connect", UCS_ERR_UNREACHABLE);
			usleep(100000); /* the server may not listen yet */
		}
	} else {
		int lfd = fd;

		setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (bind(lfd, ai->ai_addr, ai->ai_addrlen) || listen(lfd, 1))
			die("listen", UCS_ERR_IO_ERROR);
		fd = accept(lfd, NULL, NULL);
		close(lfd);
		if (fd < 0)
			die("accept", UCS_ERR_IO_ERROR);
	}
	freeaddrinfo(ai);
	return fd;
}

static ucs_status_t tag_send(ucp_ep_h ep, const void *buf, size_t len, ucp_tag_t tag)
{
	ucp_request_param_t p = { 0 };

	return wait_for(ucp_tag_send_nbx(ep, buf, len, tag, &p));
}

static void received(void *req, ucs_status_t st, const ucp_tag_recv_info_t *info, void *user)
{
	(void)req;
	(void)st;
	*(size_t *)user = info->length;
}

/*
 * A tagged message into buf; mask 0 takes any tag. Its length comes to the callback: UCX 1.13
 * fills recv_info on an immediate completion only in later versions, so none is allowed.
 */
static ucs_status_t tag_recv(void *buf, size_t len, ucp_tag_t tag, ucp_tag_t mask, size_t *got)
{
	ucp_request_param_t p = { .op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK |
						  UCP_OP_ATTR_FIELD_USER_DATA |
						  UCP_OP_ATTR_FLAG_NO_IMM_CMPL,
				  .cb.recv = received, .user_data = got };

	*got = SIZE_MAX;
	return wait_for(ucp_tag_recv_nbx(worker, buf, len, tag, mask, &p));
}

int main(int argc, char **argv)
{
	const char *port = "13400", *host = NULL;
	unsigned rounds = 20, bad = 0, checked = 0;
	ucp_params_t params = { .field_mask = UCP_PARAM_FIELD_FEATURES,
				.features = UCP_FEATURE_TAG | UCP_FEATURE_RMA };
	ucp_worker_params_t wp = { .field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE,
				   .thread_mode = UCS_THREAD_MODE_SINGLE };
	ucp_mem_map_params_t mp = { .field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS |
						  UCP_MEM_MAP_PARAM_FIELD_LENGTH,
				    .length = REGION };
	ucp_context_h ctx;
	ucp_address_t *addr;
	size_t addr_len, rkey_len;
	ucp_ep_params_t ep_params = { .field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS };
	ucp_mem_h memh;
	void *rkey_buf, *their_addr;
	uint64_t their_len, region_addr, their_region = 0;
	uint8_t *region, *buf, *want;
	ucp_ep_h ep;
	ucs_status_t st;
	int opt, fd;

	while ((opt = getopt(argc, argv, "p:n:")) != -1) {
		if (opt == 'p')
			port = optarg;
		else if (opt == 'n')
			rounds = (unsigned)atoi(optarg);
		else
			return 2;
	}
	if (optind < argc)
		host = argv[optind];
	region = aligned_alloc(4096, REGION);
	buf = malloc(REGION);
	want = malloc(REGION);
	if (!region || !buf || !want)
		die("memory", UCS_ERR_NO_MEMORY);
	memset(region, 0, REGION);
	if ((st = ucp_init(&params, NULL, &ctx)) != UCS_OK)
		die("ucp_init", st);
	if ((st = ucp_worker_create(ctx, &wp, &worker)) != UCS_OK)
		die("ucp_worker_create", st);
	if ((st = ucp_worker_get_address(worker, &addr, &addr_len)) != UCS_OK)
		die("ucp_worker_get_address", st);
	mp.address = region;
	if ((st = ucp_mem_map(ctx, &mp, &memh)) != UCS_OK)
		die("ucp_mem_map", st);
	if ((st = ucp_rkey_pack(ctx, memh, &rkey_buf, &rkey_len)) != UCS_OK)
		die("ucp_rkey_pack", st);

	fd = meet(host, port);
	their_addr = swap_blob(fd, addr, addr_len, &their_len);
	ep_params.address = their_addr;
	if ((st = ucp_ep_create(worker, &ep_params, &ep)) != UCS_OK)
		die("ucp_ep_create", st);
	{
		void *their_rkey_buf = swap_blob(fd, rkey_buf, rkey_len, &their_len);
		ucp_rkey_h rkey;

		region_addr = (uintptr_t)region;
		if (xfer_all(fd, &region_addr, 8, 1) || xfer_all(fd, &their_region, 8, 0))
			die("region exchange", UCS_ERR_IO_ERROR);
		if ((st = ucp_ep_rkey_unpack(ep, their_rkey_buf, &rkey)) != UCS_OK)
			die("ucp_ep_rkey_unpack", st);

		if (!host) {
			/* server: echo every tagged message back, until DONE; then check what the
			 * client put into the region */
			size_t got;
			uint32_t seed;

			for (;;) {
				if ((st = tag_recv(buf, REGION, 0, 0, &got)) != UCS_OK)
					die("tag_recv", st);
				if (got == sizeof(seed)) {
					memcpy(&seed, buf, sizeof(seed));
					if (seed == DONE_TAG)
						break;
				}
				if ((st = tag_send(ep, buf, got, 7)) != UCS_OK)
					die("tag_send", st);
			}
			fill(want, REGION, 0xabc);
			bad += memcmp(region, want, REGION) != 0;
			printf("ucp_check server: the region holds the client's puts: %s\n",
			       bad ? "NO" : "yes");
		} else {
			/* client: tagged messages of every size echoed back exactly */
			for (unsigned r = 0; r < rounds; r++)
				for (unsigned i = 0; i < N_SIZES; i++) {
					size_t len = sizes[i], got = 0;

					fill(want, len, r * 100 + i);
					memset(buf, 0, len);
					if ((st = tag_send(ep, want, len, 5)) != UCS_OK)
						die("tag_send", st);
					if ((st = tag_recv(buf, REGION, 7, UINT64_MAX, &got)) != UCS_OK)
						die("tag_recv", st);
					if (got != len || memcmp(buf, want, len)) {
						size_t at = 0;

						while (at < len && at < got && buf[at] == want[at])
							at++;
						printf("round %u: %zu bytes sent, %zu came back, first "
						       "wrong byte at %zu\n", r, len, got, at);
						bad++;
					}
					checked++;
				}
			/* one-sided: put the region's pattern, flush, get it back into buf */
			fill(want, REGION, 0xabc);
			{
				ucp_request_param_t p = { 0 };

				for (size_t off = 0; off < REGION; off += 1u << 20)
					if ((st = wait_for(ucp_put_nbx(ep, want + off, 1u << 20,
								       their_region + off, rkey,
								       &p))) != UCS_OK)
						die("ucp_put_nbx", st);
				if ((st = wait_for(ucp_ep_flush_nbx(ep, &p))) != UCS_OK)
					die("ucp_ep_flush_nbx", st);
				memset(buf, 0, REGION);
				if ((st = wait_for(ucp_get_nbx(ep, buf, REGION, their_region, rkey,
							       &p))) != UCS_OK)
					die("ucp_get_nbx", st);
				bad += memcmp(buf, want, REGION) != 0;
				checked++;
			}
			{
				uint32_t done = DONE_TAG;

				if ((st = tag_send(ep, &done, sizeof(done), 5)) != UCS_OK)
					die("tag_send", st);
			}
			printf("ucp_check client: %u transfers checked, %u wrong\n", checked, bad);
		}
		/* the other side has finished with us once it says so */
		{
			char ok = 1;

			if (xfer_all(fd, &ok, 1, 1) || xfer_all(fd, &ok, 1, 0))
				die("final barrier", UCS_ERR_IO_ERROR);
		}
		ucp_rkey_destroy(rkey);
		free(their_rkey_buf);
	}
	{
		ucp_request_param_t p = { .op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS,
					  .flags = UCP_EP_CLOSE_FLAG_FORCE };

		wait_for(ucp_ep_close_nbx(ep, &p));
	}
	ucp_rkey_buffer_release(rkey_buf);
	ucp_mem_unmap(ctx, memh);
	ucp_worker_release_address(worker, addr);
	ucp_worker_destroy(worker);
	ucp_cleanup(ctx);
	close(fd);
	free(their_addr);
	free(region);
	free(buf);
	free(want);
	if (bad || (host && !checked)) {
		printf("ucp_check: FAILED\n");
		return 1;
	}
	printf("ucp_check: OK\n");
	return 0;
}
