/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * metaroce-ctl: inspect and operate a running metaroced over its control socket, in the
 * grammar of iproute2's rdma(8): OBJECT [COMMAND], COMMAND defaulting to show, unique
 * prefixes accepted, `help` at every level.
 *
 *   metaroce-ctl [-j [-p]] [-s] [-d] [-w SECONDS] [-S SOCKET] OBJECT [COMMAND]
 *   objects: status, dev, peer, qp, path, metrics, config, stat, xdp, monitor, help
 *   actions: path set plane N down|up, config reload, stat reset
 *
 * -j prints JSON (one object, stable keys), -p indents it. Exit status: 0 success, 1 the
 * daemon could not be reached or refused, 2 usage error.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <sodium.h>

#include <metaroce/cm.h>
#include <metaroce/ctl.h>
#include <metaroce/xdp.h>
#include <metaroce/wire.h>

#define DEFAULT_SOCKET "/run/metaroce/metaroced.sock"

/* Where shows print: stdout, or a buffer that -p pretty-prints afterwards. */
static FILE *out;

static const char *peer_states[] = { "discovering", "known", "unreachable" };
static const char *qp_states[] = { "idle", "resolving", "rtr", "rts", "error" };


static const char *addr_str(uint8_t family, const uint8_t addr[16], char *buf, size_t len)
{
	if (family == MRC_AF_INET)
		inet_ntop(AF_INET, addr + 12, buf, (socklen_t)len);
	else
		inet_ntop(AF_INET6, addr, buf, (socklen_t)len);
	return buf;
}

/* A JSON string; control characters and quotes escaped. */
static void json_str(const char *s, size_t max)
{
	fputc('"', out);
	for (size_t i = 0; i < max && s[i]; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c == '"' || c == '\\')
			fprintf(out, "\\%c", c);
		else if (c < 0x20)
			fprintf(out, "\\u%04x", c);
		else
			fputc(c, out);
	}
	fputc('"', out);
}

static long request_arg(const char *path, uint16_t type, const void *arg, uint32_t arg_len,
			uint8_t *buf, size_t cap);

static long request(const char *path, uint16_t type, uint8_t *buf, size_t cap)
{
	return request_arg(path, type, NULL, 0, buf, cap);
}

/*
 * Sends one request (with `arg` as its payload) and waits for its reply; the reply's payload
 * lands in buf. Returns its length, or -1 with the reason on stderr.
 */
static long request_arg(const char *path, uint16_t type, const void *arg, uint32_t arg_len,
			uint8_t *buf, size_t cap)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	struct mrc_ctl_hdr req = { .magic = MRC_CTL_MAGIC, .version = MRC_CTL_VERSION,
				   .type = type, .len = arg_len, .seq = (uint32_t)getpid() };
	uint8_t packet[sizeof(req) + 64];
	struct mrc_ctl_hdr rep;
	struct pollfd pfd;
	ssize_t n;
	int fd;

	if (strlen(path) >= sizeof(sun.sun_path)) {
		fprintf(stderr, "metaroce-ctl: socket path too long: %s\n", path);
		return -1;
	}
	memcpy(sun.sun_path, path, strlen(path) + 1);
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sun, sizeof(sun))) {
		fprintf(stderr, "metaroce-ctl: cannot reach metaroced at %s: %s%s\n", path,
			strerror(errno), errno == ENOENT || errno == ECONNREFUSED ? " (is it running?)"
										   : "");
		if (fd >= 0)
			close(fd);
		return -1;
	}
	if (arg_len > sizeof(packet) - sizeof(req))
		arg_len = 0;
	memcpy(packet, &req, sizeof(req));
	if (arg_len)
		memcpy(packet + sizeof(req), arg, arg_len);
	/* a refused connection is closed, but holds why (MRC_CTL_REFUSED): read it */
	if (send(fd, packet, sizeof(req) + arg_len, MSG_NOSIGNAL) != (ssize_t)(sizeof(req) + arg_len) &&
	    errno != EPIPE && errno != ECONNRESET) {
		fprintf(stderr, "metaroce-ctl: send: %s\n", strerror(errno));
		close(fd);
		return -1;
	}
	pfd.fd = fd;
	pfd.events = POLLIN;
	if (poll(&pfd, 1, 3000) != 1) {
		fprintf(stderr, "metaroce-ctl: metaroced did not answer within 3 s\n");
		close(fd);
		return -1;
	}
	{
		static uint8_t msg[MRC_CTL_MAX_MSG];

		n = recv(fd, msg, sizeof(msg), 0);
		if (n < 0 && errno == ECONNRESET) /* reported once, ahead of a refusal's reason */
			n = recv(fd, msg, sizeof(msg), MSG_DONTWAIT);
		close(fd);
		if (n < (ssize_t)sizeof(rep)) {
			fprintf(stderr, "metaroce-ctl: short reply from metaroced\n");
			return -1;
		}
		memcpy(&rep, msg, sizeof(rep));
		if (rep.magic == MRC_CTL_MAGIC && rep.type == MRC_CTL_REFUSED && rep.status < 0) {
			fprintf(stderr, "metaroce-ctl: metaroced refused this connection: %s\n",
				strerror(-rep.status));
			return -1;
		}
		if (rep.magic != MRC_CTL_MAGIC || rep.version != MRC_CTL_VERSION ||
		    rep.type != type || rep.seq != req.seq || rep.len != (size_t)n - sizeof(rep) ||
		    rep.len > cap) {
			fprintf(stderr, "metaroce-ctl: malformed reply from metaroced\n");
			return -1;
		}
		if (rep.status) {
			fprintf(stderr, "metaroce-ctl: metaroced refused: %s\n", strerror(-rep.status));
			return -1;
		}
		memcpy(buf, msg + sizeof(rep), rep.len);
	}
	return (long)rep.len;
}

/* Each user's holdings against its limits (an operator sees every user, others themselves),
 * after the status: nothing from a daemon that does not know the request. */
static void show_users(const char *path, bool json)
{
	static const char *const names[MRC_CTL_USER_RESOURCES] = {
		"connections", "qps", "cqs", "mrs", "srqs", "registered", "page_maps"
	};
	static struct mrc_ctl_user users[MRC_CTL_MAX_MSG / sizeof(struct mrc_ctl_user)];
	long n = request(path, MRC_CTL_USERS, (uint8_t *)users, sizeof(users));

	n = n > 0 && n % (long)sizeof(users[0]) == 0 ? n / (long)sizeof(users[0]) : 0;
	for (long i = 0; i < n; i++) {
		const struct mrc_ctl_user *u = &users[i];

		if (json)
			fprintf(out, "%s{\"uid\":%u,\"limited\":%s", i ? "," : "", u->uid,
				u->limited ? "true" : "false");
		else
			fprintf(out, "user %u%s", u->uid, u->limited ? "" : "  (not limited)");
		for (unsigned r = 0; r < MRC_CTL_USER_RESOURCES; r++) {
			if (json)
				fprintf(out, ",\"%s\":[%llu,%llu]", names[r],
					(unsigned long long)u->used[r], (unsigned long long)u->limit[r]);
			else if (u->limited)
				fprintf(out, "  %s %llu/%llu", names[r], (unsigned long long)u->used[r],
					(unsigned long long)u->limit[r]);
			else
				fprintf(out, "  %s %llu", names[r], (unsigned long long)u->used[r]);
		}
		fprintf(out, json ? "}" : "\n");
	}
}

/* A 32-byte key in base64, as metaroced --public-key and allowed_peer write it. */
static const char *key_b64(const uint8_t k[32], char b64[45])
{
	return sodium_bin2base64(b64, 45, k, 32, sodium_base64_VARIANT_ORIGINAL);
}

static const char *auth_name(uint8_t mode)
{
	return mode == MRC_CTL_AUTH_FULL ? "full" : mode == MRC_CTL_AUTH_HEADER ? "header" : "off";
}

/* Each worker thread: the QPs it runs, its turns with work, its CPU time and CPU. */
static void show_workers(const char *path, bool json)
{
	static struct mrc_ctl_worker w[MRC_CTL_MAX_MSG / sizeof(struct mrc_ctl_worker)];
	long n = request(path, MRC_CTL_WORKERS, (uint8_t *)w, sizeof(w));

	n = n > 0 && n % (long)sizeof(w[0]) == 0 ? n / (long)sizeof(w[0]) : 0;
	for (long i = 0; i < n; i++) {
		if (json) {
			fprintf(out, "%s{\"worker\":%ld,\"qps\":%u,\"busy_turns\":%llu,"
				"\"qp_visits\":%llu,\"cpu_s\":%.6f,\"handovers\":%llu",
				i ? "," : "", i, w[i].qps, (unsigned long long)w[i].busy_turns,
				(unsigned long long)w[i].qp_visits, w[i].cpu_ns / 1e9,
				(unsigned long long)w[i].handovers);
			if (w[i].cpu != UINT32_MAX)
				fprintf(out, ",\"cpu\":%u", w[i].cpu);
			fprintf(out, "}");
			continue;
		}
		fprintf(out, "worker %ld%s  qps %u  busy turns %llu  cpu %.3f s  handed over %llu",
			i, i ? "" : " (control)", w[i].qps, (unsigned long long)w[i].busy_turns,
			w[i].cpu_ns / 1e9, (unsigned long long)w[i].handovers);
		if (w[i].cpu != UINT32_MAX)
			fprintf(out, "  on CPU %u", w[i].cpu);
		fprintf(out, "\n");
	}
}

static int show_status(const char *path, bool json)
{
	struct mrc_ctl_status s;
	char a[INET6_ADDRSTRLEN], key[45];

	if (request(path, MRC_CTL_STATUS, (uint8_t *)&s, sizeof(s)) != (long)sizeof(s))
		return 1;
	s.n_planes = s.n_planes > 16 ? 16 : s.n_planes;
	if (json) {
		fprintf(out, "{\"node\":\"%016llx\",\"backend\":", (unsigned long long)s.node_id);
		json_str(s.backend, sizeof(s.backend));
		fprintf(out, ",\"backend_note\":");
		json_str(s.backend_note, sizeof(s.backend_note));
		fprintf(out, ",\"port\":%u,\"uptime_s\":%.3f,\"paths_per_plane\":%u,\"planes\":[", s.port,
		       s.uptime_ns / 1e9, s.paths_per_plane);
		for (unsigned i = 0; i < s.n_planes; i++) {
			fprintf(out, "%s{\"index\":%u,\"ifname\":", i ? "," : "", s.planes[i].index);
			json_str(s.planes[i].ifname, sizeof(s.planes[i].ifname));
			fprintf(out, ",\"address\":\"%s\"}",
			       addr_str(s.planes[i].family, s.planes[i].addr, a, sizeof(a)));
		}
		fprintf(out, "],\"peers\":%u,\"rx_datagrams\":%llu,\"rx_malformed\":%llu,"
		       "\"rx_no_qp\":%llu,\"tx_datagrams\":%llu,\"clients\":%u,\"qps\":%u,"
		       "\"cqs\":%u,\"mrs\":%u,\"mapped_bytes\":%llu,\"max_payload\":%u,"
		       "\"drained_planes\":%u,\"users\":[",
		       s.n_peers, (unsigned long long)s.rx_datagrams,
		       (unsigned long long)s.rx_malformed, (unsigned long long)s.rx_no_qp,
		       (unsigned long long)s.tx_datagrams, s.n_clients, s.n_qps, s.n_cqs, s.n_mrs,
		       (unsigned long long)s.mapped_bytes, s.max_payload, s.drained_planes);
		show_users(path, true);
		fprintf(out, "],\"workers\":[");
		show_workers(path, true);
		fprintf(out, "],\"auth\":\"%s\"", auth_name(s.auth));
		if (s.auth != MRC_CTL_AUTH_OFF)
			fprintf(out, ",\"public_key\":\"%s\",\"cluster_key\":%s,\"allowed_peers\":%u",
				key_b64(s.public_key, key), s.cluster_key ? "true" : "false",
				s.allowed_peers);
		fprintf(out, "}\n");
		return 0;
	}
	fprintf(out, "node %016llx  backend %.16s%s%.64s%s  port %u  up %.1fs\n",
	       (unsigned long long)s.node_id, s.backend, s.backend_note[0] ? " (" : "",
	       s.backend_note, s.backend_note[0] ? ")" : "", s.port, s.uptime_ns / 1e9);
	for (unsigned i = 0; i < s.n_planes; i++)
		fprintf(out, "plane %u  %-15.16s %s\n", s.planes[i].index, s.planes[i].ifname,
		       addr_str(s.planes[i].family, s.planes[i].addr, a, sizeof(a)));
	fprintf(out, "peers %u  datagrams in %llu (%llu malformed, %llu for no QP)  out %llu\n",
	       s.n_peers, (unsigned long long)s.rx_datagrams, (unsigned long long)s.rx_malformed,
	       (unsigned long long)s.rx_no_qp, (unsigned long long)s.tx_datagrams);
	fprintf(out, "clients %u  qps %u  cqs %u  mrs %u  mapped %llu bytes\n", s.n_clients, s.n_qps,
	       s.n_cqs, s.n_mrs, (unsigned long long)s.mapped_bytes);
	show_workers(path, false);
	if (s.auth != MRC_CTL_AUTH_OFF)
		fprintf(out, "auth %s  public key %s  %s%u allowed peer%s\n", auth_name(s.auth),
			key_b64(s.public_key, key), s.cluster_key ? "cluster key, " : "",
			s.allowed_peers, s.allowed_peers == 1 ? "" : "s");
	else
		fprintf(out, "auth OFF: nothing is authenticated (a lab setting)\n");
	show_users(path, false);
	return 0;
}

static uint8_t family_of(const uint8_t addr[16])
{
	return mrc_addr_family(addr);
}

static bool stats;   /* -s: counters too */
static bool details; /* -d: RTT floor, rate hints */

static int show_qps(const char *path, bool json)
{
	static struct mrc_ctl_qp qps[MRC_CTL_MAX_MSG / sizeof(struct mrc_ctl_qp)];
	long n = request(path, MRC_CTL_QPS, (uint8_t *)qps, sizeof(qps));
	char a[INET6_ADDRSTRLEN];

	if (n < 0 || n % (long)sizeof(qps[0]))
		return 1;
	n /= (long)sizeof(qps[0]);
	if (json)
		fprintf(out, "{\"qps\":[");
	for (long i = 0; i < n; i++) {
		const struct mrc_ctl_qp *q = &qps[i];
		const char *state = q->state < 5 ? qp_states[q->state] : "unknown";

		addr_str(family_of(q->peer), q->peer, a, sizeof(a));
		if (json) {
			fprintf(out, "%s{\"qpn\":%u,\"state\":\"%s\",\"pid\":%d,\"uid\":%u,"
			       "\"peer\":\"%s\",\"dest_qpn\":%u,\"paths\":%u,\"worker\":%u,"
			       "\"tx_packets\":%llu,"
			       "\"tx_retransmits\":%llu,\"rx_packets\":%llu,\"rx_bytes\":%llu,"
			       "\"completions\":%llu,\"error_completions\":%llu}",
			       i ? "," : "", q->qp_num, state, q->pid, q->uid, a, q->dest_qp_num,
			       q->n_paths, q->worker, (unsigned long long)q->tx_packets,
			       (unsigned long long)q->tx_retransmits, (unsigned long long)q->rx_packets,
			       (unsigned long long)q->rx_bytes, (unsigned long long)q->completions,
			       (unsigned long long)q->error_completions);
			continue;
		}
		fprintf(out, "qp %u  %s  pid %d  peer %s qp %u  paths %u  worker %u\n", q->qp_num,
			state, q->pid, a, q->dest_qp_num, q->n_paths, q->worker);
		if (stats)
			fprintf(out, "    tx %llu packets (%llu retransmitted)  rx %llu packets %llu bytes  "
		       "completions %llu (%llu errors)\n",
		       (unsigned long long)q->tx_packets, (unsigned long long)q->tx_retransmits,
		       (unsigned long long)q->rx_packets, (unsigned long long)q->rx_bytes,
		       (unsigned long long)q->completions, (unsigned long long)q->error_completions);
	}
	if (json)
		fprintf(out, "]}\n");
	return 0;
}

static int show_cm(const char *path, bool json)
{
	static struct mrc_ctl_cm_id ids[MRC_CTL_MAX_MSG / sizeof(struct mrc_ctl_cm_id)];
	long n = request(path, MRC_CTL_CM_IDS, (uint8_t *)ids, sizeof(ids));
	char la[INET6_ADDRSTRLEN], ra[INET6_ADDRSTRLEN];

	if (n < 0 || n % (long)sizeof(ids[0]))
		return 1;
	n /= (long)sizeof(ids[0]);
	if (json)
		fprintf(out, "{\"cm_ids\":[");
	for (long i = 0; i < n; i++) {
		const struct mrc_ctl_cm_id *d = &ids[i];
		const char *ps = d->port_space == MRC_CM_PS_TCP ? "tcp"
				 : d->port_space == MRC_CM_PS_UDP ? "udp"
				 : d->port_space == MRC_CM_PS_IB  ? "ib"
								  : "ipoib";

		addr_str(family_of(d->local_addr), d->local_addr, la, sizeof(la));
		addr_str(family_of(d->remote_addr), d->remote_addr, ra, sizeof(ra));
		if (json) {
			fprintf(out, "%s{\"id\":%u,\"state\":\"%s\",\"port_space\":\"%s\",\"pid\":%d,"
				"\"uid\":%u,\"local\":\"%s\",\"local_port\":%u,\"remote\":\"%s\","
				"\"remote_port\":%u,\"qpn\":%u,\"remote_qpn\":%u,\"backlog\":%u,"
				"\"pending\":%u}",
				i ? "," : "", d->id, mrc_ctl_cm_state_name(d->state), ps, d->pid,
				d->uid, la, d->local_port, ra, d->remote_port, d->qpn, d->remote_qpn,
				d->backlog, d->pending);
			continue;
		}
		if (d->state == MRC_CM_LISTEN)
			fprintf(out, "listen %s %s:%u  pid %d  backlog %u  pending %u\n", ps, la,
				d->local_port, d->pid, d->backlog, d->pending);
		else
			fprintf(out, "id %u  %s %s  %s:%u -> %s:%u  qp %u -> %u  %s %d\n", d->id, ps,
				mrc_ctl_cm_state_name(d->state), la, d->local_port, ra, d->remote_port,
				d->qpn, d->remote_qpn, d->pid ? "pid" : "daemon's, was pid", d->pid);
	}
	if (json)
		fprintf(out, "]}\n");
	return 0;
}

static int show_metrics(const char *path)
{
	static uint8_t text[MRC_CTL_MAX_MSG];
	long n = request(path, MRC_CTL_METRICS, text, sizeof(text));

	if (n < 0)
		return 1;
	fwrite(text, 1, (size_t)n, out);
	return 0;
}

static int show_paths(const char *path, bool json)
{
	static struct mrc_ctl_path paths[MRC_CTL_MAX_MSG / sizeof(struct mrc_ctl_path)];
	long n = request(path, MRC_CTL_PATHS, (uint8_t *)paths, sizeof(paths));

	if (n < 0 || n % (long)sizeof(paths[0]))
		return 1;
	n /= (long)sizeof(paths[0]);
	if (json)
		fprintf(out, "{\"paths\":[");
	for (long i = 0; i < n; i++) {
		const struct mrc_ctl_path *p = &paths[i];
		/* congested: an up path whose window ECN cut within the last RTT */
		const char *state = p->state == MRC_CTL_PATH_UP && p->congested
					    ? "congested"
					    : mrc_ctl_path_state_name(p->state);

		if (json) {
			fprintf(out, "%s{\"qpn\":%u,\"index\":%u,\"plane\":%u,\"sport\":%u,"
			       "\"state\":\"%s\",\"cwnd\":%u,\"inflight\":%u,\"srtt_us\":%.1f,"
			       "\"min_rtt_us\":%u,\"rate_hint_mbps\":%.1f,"
			       "\"tx_packets\":%llu,\"retransmits\":%llu,\"ecn_marks\":%llu}",
			       i ? "," : "", p->qp_num, p->index, p->plane, p->sport, state, p->cwnd,
			       p->inflight, p->srtt_ns / 1e3, p->min_rtt_us, p->rate_hint_kbps / 1e3,
			       (unsigned long long)p->tx_packets, (unsigned long long)p->retransmits,
			       (unsigned long long)p->ce_marks);
			continue;
		}
		fprintf(out, "qp %u path %u  plane %u  sport %u  %-9s cwnd %u  inflight %u  srtt %.1fus",
			p->qp_num, p->index, p->plane, p->sport, state, p->cwnd, p->inflight,
			p->srtt_ns / 1e3);
		if (details)
			fprintf(out, "  min_rtt %uus  rate_hint %s", p->min_rtt_us,
				p->rate_hint_kbps ? "" : "none");
		if (details && p->rate_hint_kbps)
			fprintf(out, "%.1fMbit/s", p->rate_hint_kbps / 1e3);
		if (stats)
			fprintf(out, "  tx %llu  retx %llu  ecn %llu", (unsigned long long)p->tx_packets,
				(unsigned long long)p->retransmits, (unsigned long long)p->ce_marks);
		fputc('\n', out);
	}
	if (json)
		fprintf(out, "]}\n");
	return 0;
}

static int show_peers(const char *path, bool json)
{
	static struct mrc_ctl_peer peers[MRC_CTL_MAX_MSG / sizeof(struct mrc_ctl_peer)];
	long n = request(path, MRC_CTL_PEERS, (uint8_t *)peers, sizeof(peers));
	char a[INET6_ADDRSTRLEN], b[INET6_ADDRSTRLEN];

	if (n < 0 || n % (long)sizeof(peers[0]))
		return 1;
	n /= (long)sizeof(peers[0]);
	if (json)
		fprintf(out, "{\"peers\":[");
	for (long i = 0; i < n; i++) {
		const struct mrc_ctl_peer *p = &peers[i];
		const char *state = p->state < 3 ? peer_states[p->state] : "unknown";
		unsigned np = p->n_planes > 16 ? 16 : p->n_planes;

		/* the named address is stored as on the wire: IPv4-mapped when it is IPv4 */
		uint8_t fam = p->named[10] == 0xff && p->named[11] == 0xff && !p->named[0] ? MRC_AF_INET
											     : MRC_AF_INET6;

		if (json) {
			fprintf(out, "%s{\"address\":\"%s\",\"state\":\"%s\",\"node\":\"%016llx\","
			       "\"port\":%u,\"planes\":[",
			       i ? "," : "", addr_str(fam, p->named, a, sizeof(a)), state,
			       (unsigned long long)p->node_id, p->port);
			for (unsigned k = 0; k < np; k++)
				fprintf(out, "%s{\"index\":%u,\"address\":\"%s\",\"drained\":%s}", k ? "," : "",
				       p->planes[k].index,
				       addr_str(p->planes[k].family, p->planes[k].addr, b, sizeof(b)),
				       p->planes[k].flags & MRC_PLANE_F_DRAINED ? "true" : "false");
			fprintf(out, "]}");
			continue;
		}
		fprintf(out, "peer %s  %s  node %016llx  port %u\n", addr_str(fam, p->named, a, sizeof(a)),
		       state, (unsigned long long)p->node_id, p->port);
		for (unsigned k = 0; k < np; k++)
			fprintf(out, "  plane %u  %s%s\n", p->planes[k].index,
			       addr_str(p->planes[k].family, p->planes[k].addr, b, sizeof(b)),
			       p->planes[k].flags & MRC_PLANE_F_DRAINED ? "  drained" : "");
	}
	if (json)
		fprintf(out, "]}\n");
	return 0;
}

static int show_dev(const char *path, bool json)
{
	struct mrc_ctl_status st;
	char a[INET6_ADDRSTRLEN];
	unsigned mtu = 256;

	if (request(path, MRC_CTL_STATUS, (uint8_t *)&st, sizeof(st)) != (long)sizeof(st))
		return 1;
	st.n_planes = st.n_planes > 16 ? 16 : st.n_planes;
	while (mtu < 4096 && mtu * 2 <= st.max_payload)
		mtu *= 2;
	if (json) {
		fprintf(out, "{\"dev\":\"metaroce0\",\"link_layer\":\"ethernet\",\"port\":1,"
			     "\"state\":\"active\",\"active_mtu\":%u,\"max_payload\":%u,\"gids\":[",
			mtu, st.max_payload);
		for (unsigned i = 0; i < st.n_planes; i++)
			fprintf(out, "%s{\"index\":%u,\"gid\":\"::ffff:%s\",\"type\":\"RoCE v2\","
				     "\"plane\":%u,\"drained\":%s}",
				i ? "," : "", i,
				addr_str(st.planes[i].family, st.planes[i].addr, a, sizeof(a)),
				st.planes[i].index,
				st.drained_planes >> st.planes[i].index & 1 ? "true" : "false");
		fprintf(out, "]}\n");
		return 0;
	}
	fprintf(out, "dev metaroce0 port 1 state ACTIVE link_layer ethernet active_mtu %u "
		     "max_payload %u\n", mtu, st.max_payload);
	for (unsigned i = 0; i < st.n_planes; i++)
		fprintf(out, "    gid %u ::ffff:%s  RoCE v2  plane %u %s%s\n", i,
			addr_str(st.planes[i].family, st.planes[i].addr, a, sizeof(a)),
			st.planes[i].index, st.planes[i].ifname,
			st.drained_planes >> st.planes[i].index & 1 ? "  drained" : "");
	return 0;
}

static int show_config(const char *path, bool json)
{
	static uint8_t text[MRC_CTL_MAX_MSG];
	long n = request(path, MRC_CTL_CONFIG, text, sizeof(text) - 1);

	if (n < 0)
		return 1;
	if (json) {
		fprintf(out, "{\"config\":");
		json_str((const char *)text, (size_t)n);
		fprintf(out, "}\n");
	} else {
		fwrite(text, 1, (size_t)n, out);
	}
	return 0;
}

static int show_stats(const char *path, bool json)
{
	struct mrc_ctl_status st;

	if (request(path, MRC_CTL_STATUS, (uint8_t *)&st, sizeof(st)) != (long)sizeof(st))
		return 1;
	if (json)
		fprintf(out, "{\"rx_datagrams\":%llu,\"rx_malformed\":%llu,\"rx_no_qp\":%llu,"
			     "\"tx_datagrams\":%llu}\n",
			(unsigned long long)st.rx_datagrams, (unsigned long long)st.rx_malformed,
			(unsigned long long)st.rx_no_qp, (unsigned long long)st.tx_datagrams);
	else
		fprintf(out, "rx %llu datagrams (%llu malformed, %llu for no QP)  tx %llu datagrams\n",
			(unsigned long long)st.rx_datagrams, (unsigned long long)st.rx_malformed,
			(unsigned long long)st.rx_no_qp, (unsigned long long)st.tx_datagrams);
	return 0;
}

/* The fast path: where the program is attached, how, and what it did with packets. */
static int show_xdp(const char *path, bool json)
{
	struct mrc_ctl_status st;
	struct mrc_ctl_xdp x;
	long n;

	if (request(path, MRC_CTL_STATUS, (uint8_t *)&st, sizeof(st)) != (long)sizeof(st))
		return 1;
	st.n_planes = st.n_planes > 16 ? 16 : st.n_planes;
	memset(&x, 0, sizeof(x));
	n = strcmp(st.backend, "xdp") ? -1 : request(path, MRC_CTL_XDP, (uint8_t *)&x, sizeof(x));
	if (n >= 0 && n != (long)sizeof(x))
		return 1;
	x.n_ifaces = x.n_ifaces > 16 ? 16 : x.n_ifaces;
	x.n_outcomes = x.n_outcomes > 32 ? 32 : x.n_outcomes;
	if (json) {
		fprintf(out, "{\"backend\":");
		json_str(st.backend, sizeof(st.backend));
		fprintf(out, ",\"planes\":[");
		for (unsigned i = 0; i < st.n_planes; i++) {
			const char *mode = "null", *attach = "null";

			for (unsigned k = 0; k < x.n_ifaces; k++)
				if (x.ifaces[k].plane == st.planes[i].index) {
					mode = x.ifaces[k].native ? "\"native\"" : "\"generic\"";
					attach = x.ifaces[k].shared ? "\"dispatcher\"" : "\"alone\"";
				}
			fprintf(out, "%s{\"plane\":%u,\"ifname\":", i ? "," : "", st.planes[i].index);
			json_str(st.planes[i].ifname, sizeof(st.planes[i].ifname));
			fprintf(out, ",\"xdp\":%s,\"attach\":%s}", mode, attach);
		}
		fprintf(out, "],\"packets\":{");
		for (unsigned o = 0; o < x.n_outcomes; o++)
			fprintf(out, "%s\"%s\":%llu", o ? "," : "", mrc_xdp_outcome_name(o),
				(unsigned long long)x.outcomes[o]);
		fprintf(out, "},\"af_xdp\":{\"sockets\":%u,\"rx\":%llu,\"tx\":%llu,"
			     "\"tx_unresolved\":%llu,\"rx_bad\":%llu},\"note\":",
			x.xsk_sockets, (unsigned long long)x.xsk_rx, (unsigned long long)x.xsk_tx,
			(unsigned long long)x.xsk_tx_unresolved, (unsigned long long)x.xsk_rx_bad);
		json_str(st.backend_note, sizeof(st.backend_note));
		fprintf(out, "}\n");
		return 0;
	}
	for (unsigned i = 0; i < st.n_planes; i++) {
		const char *mode = "no XDP program: backend udp", *attach = "";

		for (unsigned k = 0; k < x.n_ifaces; k++)
			if (x.ifaces[k].plane == st.planes[i].index) {
				mode = x.ifaces[k].native ? "XDP native" : "XDP generic (skb)";
				attach = x.ifaces[k].shared ? ", libxdp dispatcher" : ", alone";
			}
		fprintf(out, "plane %u %-15.16s %s%s\n", st.planes[i].index, st.planes[i].ifname,
			mode, attach);
	}
	for (unsigned o = 0; o < x.n_outcomes; o++)
		fprintf(out, "  %-14s %llu\n", mrc_xdp_outcome_name(o),
			(unsigned long long)x.outcomes[o]);
	if (n >= 0)
		fprintf(out, "AF_XDP sockets %u  rx %llu  tx %llu  (by UDP socket, next hop unresolved: "
			     "%llu)  bad frames %llu\n",
			x.xsk_sockets, (unsigned long long)x.xsk_rx, (unsigned long long)x.xsk_tx,
			(unsigned long long)x.xsk_tx_unresolved, (unsigned long long)x.xsk_rx_bad);
	if (st.backend_note[0])
		fprintf(out, "(%.64s)\n", st.backend_note);
	return 0;
}

/* Streams the daemon's events, one line each (JSON objects with -j), until it goes away. */
static int monitor(const char *path, bool json)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	struct mrc_ctl_hdr req = { .magic = MRC_CTL_MAGIC, .version = MRC_CTL_VERSION,
				   .type = MRC_CTL_MONITOR, .seq = 1 };
	static uint8_t msg[MRC_CTL_MAX_MSG];
	int fd;

	if (strlen(path) >= sizeof(sun.sun_path))
		return 2;
	memcpy(sun.sun_path, path, strlen(path) + 1);
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sun, sizeof(sun)) ||
	    send(fd, &req, sizeof(req), MSG_NOSIGNAL) != sizeof(req)) {
		fprintf(stderr, "metaroce-ctl: cannot reach metaroced at %s: %s\n", path,
			strerror(errno));
		if (fd >= 0)
			close(fd);
		return 1;
	}
	for (;;) {
		struct mrc_ctl_hdr h;
		ssize_t n = recv(fd, msg, sizeof(msg) - 1, 0);

		if (n <= 0) {
			fprintf(stderr, "metaroce-ctl: metaroced closed the connection\n");
			close(fd);
			return 1;
		}
		if ((size_t)n < sizeof(h))
			continue;
		memcpy(&h, msg, sizeof(h));
		if (h.magic != MRC_CTL_MAGIC || h.len != (size_t)n - sizeof(h))
			continue;
		if (h.type == MRC_CTL_MONITOR && h.status) {
			fprintf(stderr, "metaroce-ctl: metaroced refused: %s\n", strerror(-h.status));
			close(fd);
			return 1;
		}
		if (h.type != MRC_CTL_EVENT)
			continue;
		msg[n] = '\0';
		if (json) {
			fprintf(out, "{\"event\":");
			json_str((const char *)msg + sizeof(h), h.len);
			fprintf(out, "}\n");
		} else {
			fprintf(out, "%s\n", (const char *)msg + sizeof(h));
		}
		fflush(out);
	}
}

/* An operator action: -j answers {"action": ACTION, "message": DONE}. */
static int simple_request(const char *path, uint16_t type, const void *arg, uint32_t len,
			  bool json, const char *action, const char *done)
{
	uint8_t reply[64];

	if (request_arg(path, type, arg, len, reply, sizeof(reply)) < 0)
		return 1;
	if (json)
		fprintf(out, "{\"action\":\"%s\",\"message\":\"%s\"}\n", action, done);
	else
		fprintf(out, "%s\n", done);
	return 0;
}

/* Pretty-prints compact JSON: two-space indentation, strings copied as they are. */
static void pretty(const char *j, size_t n)
{
	int depth = 0;
	bool in_str = false;

	for (size_t i = 0; i < n; i++) {
		char c = j[i];

		if (in_str) {
			putchar(c);
			if (c == '\\' && i + 1 < n)
				putchar(j[++i]);
			else if (c == '"')
				in_str = false;
			continue;
		}
		switch (c) {
		case '"':
			in_str = true;
			putchar(c);
			break;
		case '{':
		case '[':
			if (i + 1 < n && (j[i + 1] == '}' || j[i + 1] == ']')) {
				putchar(c);
				putchar(j[++i]);
				break;
			}
			printf("%c\n%*s", c, 2 * ++depth, "");
			break;
		case '}':
		case ']':
			printf("\n%*s%c", 2 * --depth, "", c);
			break;
		case ',':
			printf(",\n%*s", 2 * depth, "");
			break;
		case ':':
			printf(": ");
			break;
		case '\n':
			break;
		default:
			putchar(c);
		}
	}
	putchar('\n');
}

struct object {
	const char *name;
	const char *help; /* its commands, one per line */
};

static const struct object objects[] = {
	{ "status", "  status                        the daemon: node, backend, planes, clients\n" },
	{ "dev", "  dev [show]                    the verbs device: port, MTU, one GID per plane\n" },
	{ "peer", "  peer [show]                   the peer daemons and their planes\n" },
	{ "qp", "  qp [show]                     every QP: state, process, peer, paths (-s: counters)\n" },
	{ "cm", "  cm [show]                     rdma_cm listeners and connections\n" },
	{ "path", "  path [show]                   every path: plane, port, state, cwnd, RTT (-s: counters)\n"
		  "  path set plane N down|up      drain a plane for maintenance, or restore it\n" },
	{ "metrics", "  metrics [show]                the Prometheus exposition, as GET /metrics\n" },
	{ "config", "  config [show]                 the running configuration, as a file reads\n"
		    "  config reload                 reload the configuration file (as SIGHUP)\n" },
	{ "stat", "  stat [show]                   the daemon's datagram counters\n"
		  "  stat reset                    count these, every QP's and path's from zero\n"
		  "                                (exported metrics keep counting)\n" },
	{ "xdp", "  xdp [show]                    the XDP fast path on each plane\n" },
	{ "monitor", "  monitor                       stream events: paths failing and recovering, QP\n"
		     "                                errors, clients coming and going, drains, peers\n" },
	{ "help", "  help                          this text; OBJECT help for one object\n" },
};
#define N_OBJECTS (sizeof(objects) / sizeof(objects[0]))

static void usage(FILE *f)
{
	fprintf(f, "usage: metaroce-ctl [-j [-p]] [-s] [-d] [-w SECONDS] [-S SOCKET] OBJECT [COMMAND]\n"
		   "objects and commands (unique prefixes are enough: 'q s' is 'qp show'):\n");
	for (unsigned i = 0; i < N_OBJECTS; i++)
		fputs(objects[i].help, f);
	fprintf(f, "options:\n"
		   "  -S, --socket PATH  control socket (default %s)\n"
		   "  -j, --json         JSON output (stable keys; see metaroce-ctl(8))\n"
		   "  -p, --pretty       indent the JSON\n"
		   "  -s, --stats        counters too\n"
		   "  -d, --details      details too (path RTT floor, rate hint)\n"
		   "  -w, --watch SECS   show again every SECS seconds, like watch(1)\n"
		   "  -V, --version      print the version and exit\n"
		   "exit status: 0 done, 1 the daemon could not be reached or refused, 2 usage\n",
		DEFAULT_SOCKET);
}

/* The one entry of `words` that `w` is a prefix of, else NULL (and why on stderr). */
static const char *match(const char *w, const char *const *words, const char *what)
{
	const char *found = NULL;

	for (unsigned i = 0; words[i]; i++) {
		if (!strcmp(w, words[i]))
			return words[i];
		if (!strncmp(w, words[i], strlen(w))) {
			if (found) {
				fprintf(stderr, "metaroce-ctl: '%s' is ambiguous: %s or %s\n", w,
					found, words[i]);
				return NULL;
			}
			found = words[i];
		}
	}
	if (!found)
		fprintf(stderr, "metaroce-ctl: unknown %s '%s'; try 'metaroce-ctl help'\n", what, w);
	return found;
}

static int run(const char *path, bool json, int argc, char **argv)
{
	static const char *const object_names[] = { "status", "dev", "peer", "qp", "cm", "path",
						    "metrics", "config", "stat", "xdp", "monitor",
						    "help", NULL };
	const char *object = match(argv[0], object_names, "object");
	const char *cmd = argc > 1 ? argv[1] : "show";

	if (!object)
		return 2;
	if (!strcmp(object, "help")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(cmd, "help")) {
		for (unsigned i = 0; i < N_OBJECTS; i++)
			if (!strcmp(objects[i].name, object))
				fputs(objects[i].help, stdout);
		return 0;
	}
	if (!strcmp(object, "path") && argc > 1 && !strncmp(cmd, "set", strlen(cmd))) {
		struct mrc_ctl_drain dr = { 0 };
		static const char *const updown[] = { "down", "up", NULL };
		const char *to;
		char *end;
		long plane;

		if (argc != 5 || strncmp(argv[2], "plane", strlen(argv[2])) || !argv[2][0]) {
			fprintf(stderr, "metaroce-ctl: usage: path set plane N down|up\n");
			return 2;
		}
		plane = strtol(argv[3], &end, 10);
		to = match(argv[4], updown, "state");
		if (*end || end == argv[3] || plane < 0 || plane >= MRC_MAX_PLANES || !to) {
			fprintf(stderr, "metaroce-ctl: usage: path set plane N down|up (N 0..%d)\n",
				MRC_MAX_PLANES - 1);
			return 2;
		}
		dr.plane = (uint8_t)plane;
		dr.drained = !strcmp(to, "down");
		return simple_request(path, MRC_CTL_DRAIN_PLANE, &dr, sizeof(dr), json,
				      dr.drained ? "drain_plane" : "restore_plane",
				      dr.drained ? "plane drained: no new packets on it"
						 : "plane restored");
	}
	if (!strcmp(object, "monitor")) {
		if (argc > 1) {
			fprintf(stderr, "metaroce-ctl: usage: monitor\n");
			return 2;
		}
		return monitor(path, json);
	}
	if (!strcmp(object, "config") || !strcmp(object, "stat")) {
		static const char *const cmds[] = { "show", "reload", "reset", NULL };
		const char *c = argc > 2 ? NULL : match(cmd, cmds, "command");
		bool config = !strcmp(object, "config");

		if (!c || (config && !strcmp(c, "reset")) || (!config && !strcmp(c, "reload"))) {
			fprintf(stderr, "metaroce-ctl: usage: %s\n",
				config ? "config [show|reload]" : "stat [show|reset]");
			return 2;
		}
		if (!strcmp(c, "reload"))
			return simple_request(path, MRC_CTL_RELOAD, NULL, 0, json, "config_reload",
					      "configuration reloaded");
		if (!strcmp(c, "reset"))
			return simple_request(path, MRC_CTL_STAT_RESET, NULL, 0, json, "stat_reset",
					      "counters reset");
		return config ? show_config(path, json) : show_stats(path, json);
	}
	if (argc > 2 || strncmp(cmd, "show", strlen(cmd)) || !cmd[0]) {
		fprintf(stderr, "metaroce-ctl: '%s' takes 'show' only%s\n", object,
			!strcmp(object, "path") ? " or 'set plane N down|up'" : "");
		return 2;
	}
	if (!strcmp(object, "status"))
		return show_status(path, json);
	if (!strcmp(object, "dev"))
		return show_dev(path, json);
	if (!strcmp(object, "xdp"))
		return show_xdp(path, json);
	if (!strcmp(object, "peer"))
		return show_peers(path, json);
	if (!strcmp(object, "qp"))
		return show_qps(path, json);
	if (!strcmp(object, "cm"))
		return show_cm(path, json);
	if (!strcmp(object, "path"))
		return show_paths(path, json);
	return show_metrics(path);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "socket", required_argument, NULL, 'S' }, { "json", no_argument, NULL, 'j' },
		{ "pretty", no_argument, NULL, 'p' },	    { "stats", no_argument, NULL, 's' },
		{ "details", no_argument, NULL, 'd' },
		{ "watch", required_argument, NULL, 'w' },  { "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },	    { NULL, 0, NULL, 0 },
	};
	const char *path = DEFAULT_SOCKET;
	bool json = false, pretty_json = false;
	double watch = 0;
	char *end;
	int c, rc;

	out = stdout;
	while ((c = getopt_long(argc, argv, "+S:jpsdw:Vh", opts, NULL)) != -1) {
		switch (c) {
		case 'S':
			path = optarg;
			break;
		case 'j':
			json = true;
			break;
		case 'p':
			pretty_json = true;
			break;
		case 's':
			stats = true;
			break;
		case 'd':
			details = true;
			break;
		case 'w':
			watch = strtod(optarg, &end);
			if (*end || watch <= 0) {
				fprintf(stderr, "metaroce-ctl: -w wants seconds, not '%s'\n", optarg);
				return 2;
			}
			break;
		case 'h':
			usage(stdout);
			return 0;
		case 'V':
			printf("metaroce-ctl %s\n", METAROCE_VERSION);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind >= argc) {
		usage(stderr);
		return 2;
	}
	if (pretty_json && !json) {
		fprintf(stderr, "metaroce-ctl: -p pretty-prints JSON: use it with -j\n");
		return 2;
	}
	for (;;) {
		char *buf = NULL;
		size_t len = 0;

		if (watch && !json)
			printf("\033[H\033[2J"); /* like watch(1): the screen, then the show */
		if (pretty_json)
			out = open_memstream(&buf, &len);
		rc = run(path, json, argc - optind, argv + optind);
		if (pretty_json) {
			fclose(out);
			out = stdout;
			if (rc == 0)
				pretty(buf, len);
			free(buf);
		}
		fflush(stdout);
		if (!watch || rc)
			return rc;
		usleep((useconds_t)(watch * 1e6));
	}
}
