/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
#include "io/metrics.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

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
	if (d->backend.fast) {
		uint64_t x[MRC_XDP_OUTCOMES];

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
			(unsigned long long)d->backend.xsk_rx, (unsigned long long)d->backend.xsk_tx,
			(unsigned long long)d->backend.xsk_tx_unresolved);
	}
	return n;
}

/* --- the HTTP endpoint: one request per connection, answered and closed ---------------- */

static void accept_scrapers(struct mrcd *d, struct mrcd_watch *w, uint32_t events);

int mrcd_metrics_open(struct mrcd *d, char *err, size_t errlen)
{
	struct sockaddr_storage ss;
	socklen_t len;
	int fd, one = 1;

	d->metrics.fd = -1;
	if (!d->cfg.metrics)
		return 0;
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
	d->metrics = (struct mrcd_watch){ accept_scrapers, fd, 0 };
	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(fd, (struct sockaddr *)&ss, len) || listen(fd, 16) ||
	    mrcd_watch(d, &d->metrics, false)) {
		snprintf(err, errlen, "metrics_listen port %u: %s", d->cfg.metrics_port,
			 strerror(errno));
		if (fd >= 0)
			close(fd);
		d->metrics.fd = -1;
		return -1;
	}
	return 0;
}

static void drop_conn(struct mrcd_http *h)
{
	close(h->watch.fd); /* closing removes it from epoll: nobody else holds it */
	h->watch.fd = -1;
	h->req_len = 0;
}

void mrcd_metrics_close(struct mrcd *d)
{
	for (unsigned i = 0; i < MRCD_MAX_HTTP; i++)
		if (d->http[i].watch.fd >= 0)
			drop_conn(&d->http[i]);
	if (d->metrics.fd >= 0)
		close(d->metrics.fd);
	d->metrics.fd = -1;
}

/* Answers once the request head has arrived; anything but GET /metrics gets 404. */
static void serve(struct mrcd *d, struct mrcd_watch *w, uint32_t events)
{
	static char body[1 << 16];
	struct mrcd_http *h = &d->http[w->slot];
	char *req = h->req, head[256];
	ssize_t n = recv(w->fd, req + h->req_len, MRCD_HTTP_HEAD - 1 - h->req_len, MSG_DONTWAIT);
	size_t blen = 0;
	int hlen;
	bool ok;

	(void)events;
	if (n <= 0) {
		if (n == 0 || errno != EAGAIN)
			drop_conn(h);
		return;
	}
	/* read, not peeked: a head that trickles in does not keep the socket readable */
	h->req_len += (size_t)n;
	req[h->req_len] = '\0';
	if (!strstr(req, "\r\n\r\n") && h->req_len < MRCD_HTTP_HEAD - 1)
		return; /* the rest of the head is still coming */
	ok = !strncmp(req, "GET /metrics ", 13) || !strncmp(req, "GET /metrics?", 13);
	if (ok)
		blen = mrcd_metrics_render(d, body, sizeof(body));
	hlen = snprintf(head, sizeof(head),
			"HTTP/1.1 %s\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8\r\n"
			"Content-Length: %zu\r\nConnection: close\r\n\r\n",
			ok ? "200 OK" : "404 Not Found", ok ? blen : (size_t)10);
	/* small enough for the socket buffer; a scraper that does not read gets less, not us
	 * waiting */
	send(w->fd, head, (size_t)hlen, MSG_DONTWAIT | MSG_NOSIGNAL | MSG_MORE);
	send(w->fd, ok ? body : "not found\n", ok ? blen : 10, MSG_DONTWAIT | MSG_NOSIGNAL);
	drop_conn(h);
}

static void accept_scrapers(struct mrcd *d, struct mrcd_watch *w, uint32_t events)
{
	int c;

	(void)events;
	while ((c = accept4(w->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0) {
		unsigned slot = 0;

		/* a free slot, else the oldest connection goes: a client that never finishes its
		 * request cannot keep the endpoint to itself */
		for (unsigned i = 0; i < MRCD_MAX_HTTP; i++) {
			if (d->http[i].watch.fd < 0) {
				slot = i;
				break;
			}
			if (d->http[i].since < d->http[slot].since)
				slot = i;
		}
		if (d->http[slot].watch.fd >= 0)
			drop_conn(&d->http[slot]);
		d->http[slot].watch = (struct mrcd_watch){ serve, c, slot };
		if (mrcd_watch(d, &d->http[slot].watch, false)) {
			close(c);
			d->http[slot].watch.fd = -1;
			continue;
		}
		d->http[slot].since = mrcd_now_ns();
	}
}
