/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
#include "io/metrics.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <sys/socket.h>
#include <unistd.h>

#include <microhttpd.h>

#include "io/daemon.h"
#include "io/fastpath.h"
#include "log.h"

static size_t put(char *buf, size_t cap, size_t at, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static size_t put(char *buf, size_t cap, size_t at, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (at >= cap)
		return at;
	va_start(ap, fmt);
	n = vsnprintf(buf + at, cap - at, fmt, ap);
	va_end(ap);
	return n > 0 ? (at + (size_t)n < cap ? at + (size_t)n : cap) : at;
}

#define FAMILY(name, type, help) "# HELP " name " " help "\n# TYPE " name " " type "\n"

/* Each worker thread's CPU time, and the datagrams it passed to the worker of their QP. The
 * workers are stopped while this reads their counters (loop.c). */
static size_t worker_metrics(const struct mrcd *d, char *buf, size_t cap, size_t n)
{
	if (!d->workers)
		return n;
	n = put(buf, cap, n, "%s",
		FAMILY("metaroce_worker_cpu_seconds_total", "counter",
		       "CPU time each worker thread used (worker 0: the control thread)."));
	for (unsigned k = 0; k < d->n_workers; k++) {
		struct mrc_ctl_worker r;

		mrcd_worker_report(d, k, &r);
		n = put(buf, cap, n, "metaroce_worker_cpu_seconds_total{worker=\"%u\"} %.6f\n", k,
			r.cpu_ns / 1e9);
	}
	n = put(buf, cap, n, "%s",
		FAMILY("metaroce_worker_handovers_total", "counter",
		       "Datagrams a worker's socket took for another worker's QP and passed on "
		       "(a GRO train of two workers' QPs), or lost for want of room."));
	for (unsigned k = 0; k < d->n_workers; k++) {
		const struct mrcd_worker *w = &d->workers[k];

		n = put(buf, cap, n, "metaroce_worker_handovers_total{worker=\"%u\",result="
			"\"sent\"} %llu\n", k, (unsigned long long)w->handed_over);
		n = put(buf, cap, n, "metaroce_worker_handovers_total{worker=\"%u\",result="
			"\"dropped\"} %llu\n", k, (unsigned long long)w->handover_dropped);
	}
	return n;
}

size_t mrcd_metrics_render(const struct mrcd *d, char *buf, size_t cap)
{
	size_t n = 0;

	n = put(buf, cap, n,
		FAMILY("metaroce_build_info", "gauge", "Version of metaroced, always 1.")
		"metaroce_build_info{version=\"%s\",backend=\"%s\",wire_protocol=\"%u\"} 1\n",
		METAROCE_VERSION, d->backend.ops->name, MRC_WIRE_VERSION);
	n = put(buf, cap, n,
		FAMILY("metaroce_uptime_seconds", "gauge", "Seconds since the daemon started.")
		"metaroce_uptime_seconds %.3f\n", (mrcd_now_ns() - d->started_ns) / 1e9);
	if (n < cap)
		n += mrcd_core_metrics(&d->core, buf + n, cap - n);
	n = worker_metrics(d, buf, cap, n);
	if (d->backend.fast) {
		uint64_t x[MRC_XDP_OUTCOMES], woken, quiet;
		struct mrcd_xsk_counts xsk;

		mrcd_workers_xsk(d, &xsk);
		mrcd_fastpath_outcomes(d->backend.fast, x);
		n = put(buf, cap, n, "%s",
			FAMILY("metaroce_xdp_packets_total", "counter",
			       "Packets the XDP program handled, by what it did with them."));
		for (unsigned k = 0; k < MRC_XDP_OUTCOMES; k++)
			n = put(buf, cap, n, "metaroce_xdp_packets_total{outcome=\"%s\"} %llu\n",
				mrc_xdp_outcome_name(k), (unsigned long long)x[k]);
		n = put(buf, cap, n,
			FAMILY("metaroce_af_xdp_datagrams_total", "counter",
			       "Datagrams through the AF_XDP sockets, and those sent by UDP socket "
			       "instead while their next hop was unresolved.")
			"metaroce_af_xdp_datagrams_total{way=\"rx\"} %llu\n"
			"metaroce_af_xdp_datagrams_total{way=\"tx\"} %llu\n"
			"metaroce_af_xdp_datagrams_total{way=\"tx_unresolved\"} %llu\n",
			(unsigned long long)xsk.rx, (unsigned long long)xsk.tx,
			(unsigned long long)xsk.tx_unresolved);
		n = put(buf, cap, n, "%s",
			FAMILY("metaroce_xdp_sleeping_events_total", "counter",
			       "XDP events submitted while their worker slept: with a wakeup "
			       "(one per sleep, for what it acknowledges at once or every 8th "
			       "packet of a QP), or left for its next turn."));
		for (unsigned k = 0; k < d->n_workers; k++) {
			mrcd_fastpath_wake_counts(d->backend.fast, k, &woken, &quiet);
			n = put(buf, cap, n,
				"metaroce_xdp_sleeping_events_total{worker=\"%u\",wakeup=\"yes\"} "
				"%llu\n"
				"metaroce_xdp_sleeping_events_total{worker=\"%u\",wakeup=\"no\"} "
				"%llu\n", k, (unsigned long long)woken, k, (unsigned long long)quiet);
		}
	}
	return n;
}

/* --- the HTTP endpoint: libmicrohttpd, driven by the daemon's own loop --------------------- */

#define MRCD_HTTP_CONNECTIONS 64  /* scrapers connected at once ... */
#define MRCD_HTTP_PER_ADDRESS 16  /* ... and from one address */
#define MRCD_HTTP_IDLE_SECONDS 3 /* a connection that says nothing for this long is closed */

static void http_log(void *cls, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));

static void http_log(void *cls, const char *fmt, va_list ap)
{
	char line[256];

	(void)cls;
	vsnprintf(line, sizeof(line), fmt, ap);
	line[strcspn(line, "\n")] = '\0';
	mrcd_log(LOG_DEBUG, "metrics endpoint: %s", line);
}

static enum MHD_Result answer(struct mrcd *d, struct MHD_Connection *conn, unsigned status,
			      const char *body, size_t len)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(len, (void *)body,
								 MHD_RESPMEM_MUST_COPY);
	enum MHD_Result ret;

	(void)d;
	if (!r)
		return MHD_NO;
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE,
				status == MHD_HTTP_OK ? "text/plain; version=0.0.4; charset=utf-8"
						      : "text/plain; charset=utf-8");
	if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
		MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
	ret = MHD_queue_response(conn, status, r);
	MHD_destroy_response(r);
	return ret;
}

/* GET (or HEAD) /metrics; anything else is 404 or 405. Rendered when asked, never cached. */
static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
				  const char *method, const char *version, const char *upload,
				  size_t *upload_len, void **state)
{
	static char body[1 << 16];
	struct mrcd *d = cls;

	(void)version, (void)upload, (void)state;
	if (*upload_len)
		return answer(d, conn, MHD_HTTP_BAD_REQUEST, "no body expected\n", 17);
	if (strcmp(url, "/metrics"))
		return answer(d, conn, MHD_HTTP_NOT_FOUND, "not found\n", 10);
	if (strcmp(method, MHD_HTTP_METHOD_GET) && strcmp(method, MHD_HTTP_METHOD_HEAD))
		return answer(d, conn, MHD_HTTP_METHOD_NOT_ALLOWED, "GET or HEAD\n", 12);
	return answer(d, conn, MHD_HTTP_OK, body, mrcd_metrics_render(d, body, sizeof(body)));
}

/* Its epoll descriptor is ready: libmicrohttpd does the I/O it has, without waiting. */
static void run_http(struct mrcd *d, struct mrcd_watch *w, uint32_t events)
{
	(void)w, (void)events;
	MHD_run(d->http);
}

uint64_t mrcd_metrics_next_timeout(const struct mrcd *d, uint64_t now_ns)
{
	MHD_UNSIGNED_LONG_LONG ms;

	if (!d->http || MHD_get_timeout(d->http, &ms) != MHD_YES)
		return UINT64_MAX;
	return now_ns + (uint64_t)ms * 1000000u;
}

void mrcd_metrics_on_timeout(struct mrcd *d)
{
	if (d->http)
		MHD_run(d->http);
}

/* The listening socket is ours, bound to the configured address (IPv4 or IPv6, as the
 * configuration parser gave it); libmicrohttpd accepts on it and speaks HTTP. */
static int listen_socket(const struct mrcd *d)
{
	struct sockaddr_storage ss;
	socklen_t len;
	int fd, one = 1;

	memset(&ss, 0, sizeof(ss));
	if (mrc_addr_is_v4(d->cfg.metrics_addr.addr)) {
		struct sockaddr_in *in = (struct sockaddr_in *)&ss;

		in->sin_family = AF_INET;
		in->sin_port = htons(d->cfg.metrics_port);
		memcpy(&in->sin_addr, d->cfg.metrics_addr.addr + 12, 4);
		len = sizeof(*in);
	} else {
		struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&ss;

		in6->sin6_family = AF_INET6;
		in6->sin6_port = htons(d->cfg.metrics_port);
		memcpy(&in6->sin6_addr, d->cfg.metrics_addr.addr, 16);
		len = sizeof(*in6);
	}
	fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(fd, (struct sockaddr *)&ss, len) || listen(fd, 16)) {
		int e = errno;

		close(fd);
		errno = e;
		return -1;
	}
	return fd;
}

int mrcd_metrics_open(struct mrcd *d, char *err, size_t errlen)
{
	const union MHD_DaemonInfo *info;
	int fd;

	d->metrics.fd = -1;
	d->http = NULL;
	if (!d->cfg.metrics)
		return 0;
	fd = listen_socket(d);
	if (fd < 0) {
		snprintf(err, errlen, "metrics_listen port %u: %s", d->cfg.metrics_port,
			 strerror(errno));
		return -1;
	}
	/* no thread of its own: its epoll descriptor joins the loop's, and it runs when that
	 * is ready or its connection timeout is due */
	d->http = MHD_start_daemon(MHD_USE_EPOLL | MHD_USE_ERROR_LOG,
				   0, NULL, NULL, on_request, d, MHD_OPTION_LISTEN_SOCKET, fd,
				   MHD_OPTION_CONNECTION_LIMIT, (unsigned)MRCD_HTTP_CONNECTIONS,
				   MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned)MRCD_HTTP_PER_ADDRESS,
				   MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)MRCD_HTTP_IDLE_SECONDS,
				   MHD_OPTION_EXTERNAL_LOGGER, http_log, NULL, MHD_OPTION_END);
	if (!d->http) {
		snprintf(err, errlen, "metrics_listen port %u: libmicrohttpd would not start",
			 d->cfg.metrics_port);
		close(fd);
		return -1;
	}
	info = MHD_get_daemon_info(d->http, MHD_DAEMON_INFO_EPOLL_FD);
	if (!info) {
		snprintf(err, errlen, "metrics endpoint: libmicrohttpd has no epoll descriptor");
		mrcd_metrics_close(d);
		return -1;
	}
	d->metrics = (struct mrcd_watch){ .ready = run_http, .fd = info->epoll_fd };
	if (mrcd_watch(d, &d->metrics, false)) {
		snprintf(err, errlen, "metrics endpoint: epoll: %s", strerror(errno));
		mrcd_metrics_close(d);
		return -1;
	}
	return 0;
}

void mrcd_metrics_close(struct mrcd *d)
{
	if (d->http) {
		/* closes its epoll descriptor (leaving the loop's set) and its connections; the
		 * listening socket was ours */
		int fd = MHD_quiesce_daemon(d->http);

		MHD_stop_daemon(d->http);
		if (fd >= 0)
			close(fd);
	}
	d->http = NULL;
	d->metrics.fd = -1;
}
