/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * metaroce-ctl: inspect a running metaroced over its control socket.
 *
 *   metaroce-ctl [-S SOCKET] [-j] status
 *   metaroce-ctl [-S SOCKET] [-j] peer [show]
 *   metaroce-ctl [-S SOCKET] [-j] qp [show]
 *   metaroce-ctl [-S SOCKET] [-j] path [show]
 *   metaroce-ctl [-S SOCKET] metrics
 *
 * The grammar is iproute2's `rdma` tool's: OBJECT [COMMAND], COMMAND defaulting to show.
 * -j prints JSON (one object, stable keys). Exit status: 0 success, 1 the daemon could not be
 * reached or refused, 2 usage error.
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

#include <metaroce/ctl.h>
#include <metaroce/wire.h>

#define DEFAULT_SOCKET "/run/metaroce/metaroced.sock"

static const char *peer_states[] = { "discovering", "known", "unreachable" };
static const char *qp_states[] = { "idle", "resolving", "rtr", "rts", "error" };
static const char *path_states[] = { "up", "failed", "drained", "probing" };

static void usage(FILE *f)
{
	fprintf(f, "usage: metaroce-ctl [-S SOCKET] [-j] OBJECT [COMMAND]\n"
		   "objects:\n"
		   "  status            the daemon: node, backend, planes, clients, counters\n"
		   "  peer [show]       the peers it knows and their planes\n"
		   "  qp [show]         the QPs of its clients: state, peer, paths, counters\n"
		   "  path [show]       every path of every QP: plane, port, state, cwnd, RTT\n"
		   "  metrics           the Prometheus exposition (as GET /metrics serves it)\n"
		   "options:\n"
		   "  -S, --socket PATH control socket (default %s)\n"
		   "  -j, --json        JSON output\n"
		   "  -V, --version     print the version and exit\n",
		   DEFAULT_SOCKET);
}

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
	putchar('"');
	for (size_t i = 0; i < max && s[i]; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c == '"' || c == '\\')
			printf("\\%c", c);
		else if (c < 0x20)
			printf("\\u%04x", c);
		else
			putchar(c);
	}
	putchar('"');
}

/* Sends one request and waits for its reply; the payload lands in buf. Returns its length. */
static long request(const char *path, uint16_t type, uint8_t *buf, size_t cap)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	struct mrc_ctl_hdr req = { .magic = MRC_CTL_MAGIC, .version = MRC_CTL_VERSION,
				   .type = type, .seq = (uint32_t)getpid() };
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
	if (send(fd, &req, sizeof(req), MSG_NOSIGNAL) != sizeof(req)) {
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
		close(fd);
		if (n < (ssize_t)sizeof(rep)) {
			fprintf(stderr, "metaroce-ctl: short reply from metaroced\n");
			return -1;
		}
		memcpy(&rep, msg, sizeof(rep));
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

static int show_status(const char *path, bool json)
{
	struct mrc_ctl_status s;
	char a[INET6_ADDRSTRLEN];

	if (request(path, MRC_CTL_STATUS, (uint8_t *)&s, sizeof(s)) != (long)sizeof(s))
		return 1;
	s.n_planes = s.n_planes > 16 ? 16 : s.n_planes;
	if (json) {
		printf("{\"node\":\"%016llx\",\"backend\":", (unsigned long long)s.node_id);
		json_str(s.backend, sizeof(s.backend));
		printf(",\"backend_note\":");
		json_str(s.backend_note, sizeof(s.backend_note));
		printf(",\"port\":%u,\"uptime_s\":%.3f,\"paths_per_plane\":%u,\"planes\":[", s.port,
		       s.uptime_ns / 1e9, s.paths_per_plane);
		for (unsigned i = 0; i < s.n_planes; i++) {
			printf("%s{\"index\":%u,\"ifname\":", i ? "," : "", s.planes[i].index);
			json_str(s.planes[i].ifname, sizeof(s.planes[i].ifname));
			printf(",\"address\":\"%s\"}",
			       addr_str(s.planes[i].family, s.planes[i].addr, a, sizeof(a)));
		}
		printf("],\"peers\":%u,\"rx_datagrams\":%llu,\"rx_malformed\":%llu,"
		       "\"rx_no_qp\":%llu,\"tx_datagrams\":%llu,\"clients\":%u,\"qps\":%u,"
		       "\"cqs\":%u,\"mrs\":%u,\"mapped_bytes\":%llu,\"max_payload\":%u}\n",
		       s.n_peers, (unsigned long long)s.rx_datagrams,
		       (unsigned long long)s.rx_malformed, (unsigned long long)s.rx_no_qp,
		       (unsigned long long)s.tx_datagrams, s.n_clients, s.n_qps, s.n_cqs, s.n_mrs,
		       (unsigned long long)s.mapped_bytes, s.max_payload);
		return 0;
	}
	printf("node %016llx  backend %.16s%s%.64s%s  port %u  up %.1fs\n",
	       (unsigned long long)s.node_id, s.backend, s.backend_note[0] ? " (" : "",
	       s.backend_note, s.backend_note[0] ? ")" : "", s.port, s.uptime_ns / 1e9);
	for (unsigned i = 0; i < s.n_planes; i++)
		printf("plane %u  %-15.16s %s\n", s.planes[i].index, s.planes[i].ifname,
		       addr_str(s.planes[i].family, s.planes[i].addr, a, sizeof(a)));
	printf("peers %u  datagrams in %llu (%llu malformed, %llu for no QP)  out %llu\n",
	       s.n_peers, (unsigned long long)s.rx_datagrams, (unsigned long long)s.rx_malformed,
	       (unsigned long long)s.rx_no_qp, (unsigned long long)s.tx_datagrams);
	printf("clients %u  qps %u  cqs %u  mrs %u  mapped %llu bytes\n", s.n_clients, s.n_qps,
	       s.n_cqs, s.n_mrs, (unsigned long long)s.mapped_bytes);
	return 0;
}

static uint8_t family_of(const uint8_t addr[16])
{
	static const uint8_t v4_mapped[12] = MRC_V4_MAPPED_PREFIX;

	return memcmp(addr, v4_mapped, 12) ? MRC_AF_INET6 : MRC_AF_INET;
}

static int show_qps(const char *path, bool json)
{
	static struct mrc_ctl_qp qps[MRC_CTL_MAX_MSG / sizeof(struct mrc_ctl_qp)];
	long n = request(path, MRC_CTL_QPS, (uint8_t *)qps, sizeof(qps));
	char a[INET6_ADDRSTRLEN];

	if (n < 0 || n % (long)sizeof(qps[0]))
		return 1;
	n /= (long)sizeof(qps[0]);
	if (json)
		printf("{\"qps\":[");
	for (long i = 0; i < n; i++) {
		const struct mrc_ctl_qp *q = &qps[i];
		const char *state = q->state < 5 ? qp_states[q->state] : "unknown";

		addr_str(family_of(q->peer), q->peer, a, sizeof(a));
		if (json) {
			printf("%s{\"qpn\":%u,\"state\":\"%s\",\"pid\":%d,\"uid\":%u,"
			       "\"peer\":\"%s\",\"dest_qpn\":%u,\"paths\":%u,\"tx_packets\":%llu,"
			       "\"tx_retransmits\":%llu,\"rx_packets\":%llu,\"rx_bytes\":%llu,"
			       "\"completions\":%llu,\"error_completions\":%llu}",
			       i ? "," : "", q->qp_num, state, q->pid, q->uid, a, q->dest_qp_num,
			       q->n_paths, (unsigned long long)q->tx_packets,
			       (unsigned long long)q->tx_retransmits, (unsigned long long)q->rx_packets,
			       (unsigned long long)q->rx_bytes, (unsigned long long)q->completions,
			       (unsigned long long)q->error_completions);
			continue;
		}
		printf("qp %u  %s  pid %d  peer %s qp %u  paths %u\n", q->qp_num, state, q->pid, a,
		       q->dest_qp_num, q->n_paths);
		printf("    tx %llu packets (%llu retransmitted)  rx %llu packets %llu bytes  "
		       "completions %llu (%llu errors)\n",
		       (unsigned long long)q->tx_packets, (unsigned long long)q->tx_retransmits,
		       (unsigned long long)q->rx_packets, (unsigned long long)q->rx_bytes,
		       (unsigned long long)q->completions, (unsigned long long)q->error_completions);
	}
	if (json)
		printf("]}\n");
	return 0;
}

static int show_metrics(const char *path)
{
	static uint8_t text[MRC_CTL_MAX_MSG];
	long n = request(path, MRC_CTL_METRICS, text, sizeof(text));

	if (n < 0)
		return 1;
	fwrite(text, 1, (size_t)n, stdout);
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
		printf("{\"paths\":[");
	for (long i = 0; i < n; i++) {
		const struct mrc_ctl_path *p = &paths[i];
		const char *state = p->state < 4 ? path_states[p->state] : "unknown";

		if (json) {
			printf("%s{\"qpn\":%u,\"index\":%u,\"plane\":%u,\"sport\":%u,"
			       "\"state\":\"%s\",\"cwnd\":%u,\"inflight\":%u,\"srtt_us\":%.1f,"
			       "\"tx_packets\":%llu,\"retransmits\":%llu,\"ecn_marks\":%llu}",
			       i ? "," : "", p->qp_num, p->index, p->plane, p->sport, state, p->cwnd,
			       p->inflight, p->srtt_ns / 1e3, (unsigned long long)p->tx_packets,
			       (unsigned long long)p->retransmits, (unsigned long long)p->ce_marks);
			continue;
		}
		printf("qp %u path %u  plane %u  sport %u  %-7s cwnd %u  inflight %u  srtt %.1fus  "
		       "tx %llu  retx %llu  ecn %llu\n",
		       p->qp_num, p->index, p->plane, p->sport, state, p->cwnd, p->inflight,
		       p->srtt_ns / 1e3, (unsigned long long)p->tx_packets,
		       (unsigned long long)p->retransmits, (unsigned long long)p->ce_marks);
	}
	if (json)
		printf("]}\n");
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
		printf("{\"peers\":[");
	for (long i = 0; i < n; i++) {
		const struct mrc_ctl_peer *p = &peers[i];
		const char *state = p->state < 3 ? peer_states[p->state] : "unknown";
		unsigned np = p->n_planes > 16 ? 16 : p->n_planes;

		/* the named address is stored as on the wire: IPv4-mapped when it is IPv4 */
		uint8_t fam = p->named[10] == 0xff && p->named[11] == 0xff && !p->named[0] ? MRC_AF_INET
											     : MRC_AF_INET6;

		if (json) {
			printf("%s{\"address\":\"%s\",\"state\":\"%s\",\"node\":\"%016llx\","
			       "\"port\":%u,\"planes\":[",
			       i ? "," : "", addr_str(fam, p->named, a, sizeof(a)), state,
			       (unsigned long long)p->node_id, p->port);
			for (unsigned k = 0; k < np; k++)
				printf("%s{\"index\":%u,\"address\":\"%s\",\"drained\":%s}", k ? "," : "",
				       p->planes[k].index,
				       addr_str(p->planes[k].family, p->planes[k].addr, b, sizeof(b)),
				       p->planes[k].flags & MRC_PLANE_F_DRAINED ? "true" : "false");
			printf("]}");
			continue;
		}
		printf("peer %s  %s  node %016llx  port %u\n", addr_str(fam, p->named, a, sizeof(a)),
		       state, (unsigned long long)p->node_id, p->port);
		for (unsigned k = 0; k < np; k++)
			printf("  plane %u  %s%s\n", p->planes[k].index,
			       addr_str(p->planes[k].family, p->planes[k].addr, b, sizeof(b)),
			       p->planes[k].flags & MRC_PLANE_F_DRAINED ? "  drained" : "");
	}
	if (json)
		printf("]}\n");
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "socket", required_argument, NULL, 'S' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	const char *path = DEFAULT_SOCKET, *object, *command;
	bool json = false;
	int c;

	while ((c = getopt_long(argc, argv, "+S:jVh", opts, NULL)) != -1) {
		switch (c) {
		case 'S':
			path = optarg;
			break;
		case 'j':
			json = true;
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
	object = argv[optind];
	command = optind + 1 < argc ? argv[optind + 1] : "show";
	if (optind + 2 < argc) {
		fprintf(stderr, "metaroce-ctl: unexpected argument '%s'\n", argv[optind + 2]);
		return 2;
	}
	if (!strcmp(object, "status") && optind + 1 == argc)
		return show_status(path, json);
	if (!strcmp(object, "peer") && !strcmp(command, "show"))
		return show_peers(path, json);
	if (!strcmp(object, "qp") && !strcmp(command, "show"))
		return show_qps(path, json);
	if (!strcmp(object, "path") && !strcmp(command, "show"))
		return show_paths(path, json);
	if (!strcmp(object, "metrics") && optind + 1 == argc)
		return show_metrics(path);
	fprintf(stderr, "metaroce-ctl: unknown command '%s%s%s'; try 'status', 'peer show', "
			"'qp show', 'path show' or 'metrics'\n",
		object, optind + 1 < argc ? " " : "", optind + 1 < argc ? command : "");
	return 2;
}
