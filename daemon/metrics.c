/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
#include "metrics.h"
#include "fastpath.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "daemon.h"
#include "log.h"

struct out {
	char *buf;
	size_t cap, len;
};

__attribute__((format(printf, 2, 3))) static void put(struct out *o, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (o->len >= o->cap)
		return;
	va_start(ap, fmt);
	n = vsnprintf(o->buf + o->len, o->cap - o->len, fmt, ap);
	va_end(ap);
	if (n > 0)
		o->len = o->len + (size_t)n < o->cap ? o->len + (size_t)n : o->cap;
}

static void family(struct out *o, const char *name, const char *type, const char *help)
{
	put(o, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

struct plane_sums {
	unsigned paths[4]; /* by enum mrc_path_state */
	uint64_t tx_packets, retransmits, ecn;
	double srtt_sum;
	unsigned srtt_n;
};

/* One counter family with a sample per configured plane; `field` is a uint64_t of plane_sums. */
static void plane_counter(struct out *o, const struct mrcd *d, const struct plane_sums *p,
			  const char *name, const char *help, size_t field)
{
	family(o, name, "counter", help);
	for (unsigned i = 0; i < d->cfg.n_planes; i++) {
		uint64_t v;

		memcpy(&v, (const uint8_t *)&p[d->cfg.planes[i].index] + field, sizeof(v));
		put(o, "%s{plane=\"%u\"} %llu\n", name, d->cfg.planes[i].index,
		    (unsigned long long)v);
	}
}

size_t mrcd_metrics_render(const struct mrcd *d, char *buf, size_t cap)
{
	struct plane_sums p[MRC_MAX_PLANES];
	const struct mrcd_clients *c = &d->clients;
	struct out o = { buf, cap, 0 };
	unsigned clients = 0, qp_state[5] = { 0 };
	uint64_t completions = 0, errors = 0;

	memset(p, 0, sizeof(p));
	for (unsigned i = 0; i < MRCD_MAX_CLIENTS; i++)
		clients += c->client[i].library;
	for (unsigned i = 0; c->qps && i < MRCD_MAX_QPS; i++) {
		const struct mrcd_qp *qp = &c->qps[i];

		if (qp->owner < 0)
			continue;
		qp_state[qp->state < 5 ? qp->state : 4]++;
		completions += qp->completions;
		errors += qp->error_completions;
		for (unsigned k = 0; qp->conn && k < mrc_conn_n_paths(qp->conn); k++) {
			const struct mrc_path *path = mrc_conn_path(qp->conn, k);
			struct plane_sums *s = &p[path->plane % MRC_MAX_PLANES];

			s->paths[path->state < 4 ? path->state : 0]++;
			s->tx_packets += path->stats.tx_packets;
			s->retransmits += path->stats.retransmits;
			s->ecn += path->stats.ecn_echoes;
			if (path->rtt.srtt_ns) {
				s->srtt_sum += path->rtt.srtt_ns / 1e9;
				s->srtt_n++;
			}
		}
	}

	/* the counts of QPs that are gone: the totals never fall */
	completions += c->retired.completions;
	errors += c->retired.error_completions;
	for (unsigned i = 0; i < MRC_MAX_PLANES; i++) {
		p[i].tx_packets += c->retired.path_tx[i];
		p[i].retransmits += c->retired.path_retx[i];
		p[i].ecn += c->retired.path_ecn[i];
	}

	family(&o, "metaroce_build_info", "gauge", "Version of metaroced, always 1.");
	put(&o, "metaroce_build_info{version=\"%s\",backend=\"%s\",wire_protocol=\"%u\"} 1\n",
	    METAROCE_VERSION, d->backend.ops->name, MRC_WIRE_VERSION);
	family(&o, "metaroce_uptime_seconds", "gauge", "Seconds since the daemon started.");
	put(&o, "metaroce_uptime_seconds %.3f\n", (mrcd_now_ns() - d->started_ns) / 1e9);
	family(&o, "metaroce_clients", "gauge", "Library clients connected.");
	put(&o, "metaroce_clients %u\n", clients);
	family(&o, "metaroce_qps", "gauge", "Queue pairs of all clients, by state.");
	{
		static const char *names[5] = { "idle", "resolving", "rtr", "rts", "error" };

		for (unsigned i = 0; i < 5; i++)
			put(&o, "metaroce_qps{state=\"%s\"} %u\n", names[i], qp_state[i]);
	}
	family(&o, "metaroce_qps_lingering", "gauge",
	       "Destroyed queue pairs still answering their peers' resends.");
	put(&o, "metaroce_qps_lingering %u\n", c->lingering.n);
	family(&o, "metaroce_memory_regions", "gauge", "Memory regions registered.");
	put(&o, "metaroce_memory_regions %u\n", c->n_mrs);
	family(&o, "metaroce_mapped_bytes", "gauge", "Client memory the daemon maps.");
	put(&o, "metaroce_mapped_bytes %llu\n", (unsigned long long)c->mapped_bytes);
	family(&o, "metaroce_peers", "gauge", "Peer daemons known or being discovered.");
	put(&o, "metaroce_peers %u\n", d->peers.n_peers);
	family(&o, "metaroce_rx_datagrams_total", "counter", "Datagrams received.");
	put(&o, "metaroce_rx_datagrams_total %llu\n", (unsigned long long)d->stats.rx_datagrams);
	family(&o, "metaroce_rx_malformed_total", "counter",
	       "Datagrams the decoder refused (never answered).");
	put(&o, "metaroce_rx_malformed_total %llu\n", (unsigned long long)d->stats.rx_malformed);
	family(&o, "metaroce_rx_no_qp_total", "counter",
	       "Datagrams for a QP this daemon does not have, or from an address not its peer's.");
	put(&o, "metaroce_rx_no_qp_total %llu\n", (unsigned long long)d->stats.rx_no_qp);
	family(&o, "metaroce_tx_datagrams_total", "counter", "Datagrams sent.");
	put(&o, "metaroce_tx_datagrams_total %llu\n", (unsigned long long)d->stats.tx_datagrams);
	family(&o, "metaroce_tx_held_dropped_total", "counter",
	       "Datagrams given up to loss recovery after the local queue took nothing for 2 ms.");
	put(&o, "metaroce_tx_held_dropped_total %llu\n",
	    (unsigned long long)d->stats.tx_held_dropped);
	if (d->backend.fast) {
		uint64_t x[MRC_XDP_OUTCOMES];

		mrcd_fastpath_outcomes(d->backend.fast, x);
		family(&o, "metaroce_xdp_packets_total", "counter",
		       "Packets the XDP program handled, by what it did with them.");
		for (unsigned k = 0; k < MRC_XDP_OUTCOMES; k++)
			put(&o, "metaroce_xdp_packets_total{outcome=\"%s\"} %llu\n",
			    mrc_xdp_outcome_name(k), (unsigned long long)x[k]);
		family(&o, "metaroce_af_xdp_datagrams_total", "counter",
		       "Datagrams through the AF_XDP sockets, and those sent by UDP socket instead "
		       "while their next hop was unresolved.");
		put(&o, "metaroce_af_xdp_datagrams_total{way=\"rx\"} %llu\n",
		    (unsigned long long)d->backend.xsk_rx);
		put(&o, "metaroce_af_xdp_datagrams_total{way=\"tx\"} %llu\n",
		    (unsigned long long)d->backend.xsk_tx);
		put(&o, "metaroce_af_xdp_datagrams_total{way=\"tx_unresolved\"} %llu\n",
		    (unsigned long long)d->backend.xsk_tx_unresolved);
	}
	family(&o, "metaroce_completions_total", "counter", "Work completions delivered.");
	put(&o, "metaroce_completions_total %llu\n", (unsigned long long)completions);
	family(&o, "metaroce_error_completions_total", "counter",
	       "Work completions with an error status.");
	put(&o, "metaroce_error_completions_total %llu\n", (unsigned long long)errors);

	family(&o, "metaroce_path_up", "gauge", "Paths of all QPs on the plane, by state.");
	for (unsigned i = 0; i < d->cfg.n_planes; i++)
		for (unsigned s = 0; s < MRC_CTL_PATH_STATES; s++)
			put(&o, "metaroce_path_up{plane=\"%u\",state=\"%s\"} %u\n",
			    d->cfg.planes[i].index, mrc_ctl_path_state_name(s),
			    p[d->cfg.planes[i].index].paths[s]);
	plane_counter(&o, d, p, "metaroce_path_tx_packets_total",
		      "Sequenced packets sent on the plane's paths, retransmissions included.",
		      offsetof(struct plane_sums, tx_packets));
	plane_counter(&o, d, p, "metaroce_path_retransmits_total",
		      "Retransmissions on the plane's paths.", offsetof(struct plane_sums, retransmits));
	plane_counter(&o, d, p, "metaroce_path_ecn_marks_total",
		      "Acknowledgements that echoed ECN CE, on the plane's paths.",
		      offsetof(struct plane_sums, ecn));
	family(&o, "metaroce_path_rtt_seconds", "gauge",
	       "Mean smoothed RTT of the plane's paths that have one.");
	for (unsigned i = 0; i < d->cfg.n_planes; i++) {
		const struct plane_sums *s = &p[d->cfg.planes[i].index];

		put(&o, "metaroce_path_rtt_seconds{plane=\"%u\"} %.9f\n", d->cfg.planes[i].index,
		    s->srtt_n ? s->srtt_sum / s->srtt_n : 0.0);
	}
	return o.len;
}

/* --- the HTTP endpoint: one request per connection, answered and closed ---------------- */


int mrcd_metrics_open(struct mrcd *d, char *err, size_t errlen)
{
	struct sockaddr_storage ss;
	socklen_t len;
	int fd, one = 1;

	d->metrics_fd = -1;
	for (unsigned i = 0; i < MRCD_MAX_HTTP; i++)
		d->metrics_conn[i] = -1;
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
	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(fd, (struct sockaddr *)&ss, len) || listen(fd, 16) || mrcd_epoll_watch(d, fd)) {
		snprintf(err, errlen, "metrics_listen port %u: %s", d->cfg.metrics_port,
			 strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	d->metrics_fd = fd;
	return 0;
}

void mrcd_metrics_close(struct mrcd *d)
{
	for (unsigned i = 0; i < MRCD_MAX_HTTP; i++)
		if (d->metrics_conn[i] >= 0)
			close(d->metrics_conn[i]);
	if (d->metrics_fd >= 0)
		close(d->metrics_fd);
	d->metrics_fd = -1;
}

static void drop_conn(struct mrcd *d, unsigned i)
{
	close(d->metrics_conn[i]); /* closing removes it from epoll: nobody else holds it */
	d->metrics_conn[i] = -1;
	d->metrics_req_len[i] = 0;
}

/* Answers once the request head has arrived; anything but GET /metrics gets 404. */
static void serve(struct mrcd *d, unsigned i)
{
	static char body[1 << 16];
	char *req = d->metrics_req[i], head[256];
	size_t have = d->metrics_req_len[i];
	ssize_t n = recv(d->metrics_conn[i], req + have, MRCD_HTTP_HEAD - 1 - have, MSG_DONTWAIT);
	size_t blen = 0;
	int hlen;
	bool ok;

	if (n <= 0) {
		if (n == 0 || errno != EAGAIN)
			drop_conn(d, i);
		return;
	}
	/* read, not peeked: a head that trickles in does not keep the socket readable */
	have += (size_t)n;
	d->metrics_req_len[i] = have;
	req[have] = '\0';
	if (!strstr(req, "\r\n\r\n") && have < MRCD_HTTP_HEAD - 1)
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
	send(d->metrics_conn[i], head, (size_t)hlen, MSG_DONTWAIT | MSG_NOSIGNAL | MSG_MORE);
	send(d->metrics_conn[i], ok ? body : "not found\n", ok ? blen : 10,
	     MSG_DONTWAIT | MSG_NOSIGNAL);
	drop_conn(d, i);
}

bool mrcd_metrics_event(struct mrcd *d, int fd)
{
	if (d->metrics_fd >= 0 && fd == d->metrics_fd) {
		int c;

		while ((c = accept4(d->metrics_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0) {
			unsigned slot = 0;

			/* a free slot, else the oldest connection goes: a client that never
			 * finishes its request cannot keep the endpoint to itself */
			for (unsigned i = 0; i < MRCD_MAX_HTTP; i++) {
				if (d->metrics_conn[i] < 0) {
					slot = i;
					break;
				}
				if (d->metrics_since[i] < d->metrics_since[slot])
					slot = i;
			}
			if (d->metrics_conn[slot] >= 0)
				drop_conn(d, slot);
			if (mrcd_epoll_watch(d, c)) {
				close(c);
				continue;
			}
			d->metrics_conn[slot] = c;
			d->metrics_since[slot] = mrcd_now_ns();
		}
		return true;
	}
	for (unsigned i = 0; i < MRCD_MAX_HTTP; i++)
		if (d->metrics_conn[i] == fd) {
			serve(d, i);
			return true;
		}
	return false;
}
