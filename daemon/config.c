/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include <metaroce/ctl.h>

#include "shm/spin.h"

#define MAX_LINE 1024


static int fail(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int fail(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (err && errlen) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return -1;
}

void mrcd_config_default(struct mrcd_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->backend = MRCD_BACKEND_AUTO;
	cfg->port = MRC_UDP_PORT_DEFAULT;
	cfg->paths_per_plane = 4;
	cfg->mtu = 1500;
	cfg->rto_initial_ns = 1000000; /* SPEC 16's, as the engine's defaults */
	cfg->rto_min_ns = 200000;
	cfg->rto_max_ns = 100000000;
	cfg->udp_gso = true;
	cfg->user = (struct mrcd_user_limits){ .connections = 64, .qps = MRC_CTL_CLIENT_MAX_QPS,
					       .cqs = MRC_CTL_CLIENT_MAX_CQS,
					       .mrs = MRC_CTL_CLIENT_MAX_MRS,
					       .srqs = MRC_CTL_CLIENT_MAX_SRQS };
	snprintf(cfg->control_socket, sizeof(cfg->control_socket), "%s",
		 MRCD_CONTROL_SOCKET_DEFAULT);
	snprintf(cfg->key_file, sizeof(cfg->key_file), "%s", MRCD_KEY_FILE_DEFAULT);
}

bool mrcd_config_authenticates(const struct mrcd_config *cfg)
{
	return cfg->auth == MRCD_AUTH_HEADER || cfg->auth == MRCD_AUTH_FULL ||
	       (cfg->auth == MRCD_AUTH_AUTO && (cfg->cluster_key_file[0] || cfg->n_allowed));
}

const char *mrcd_backend_name(enum mrcd_backend_kind b)
{
	switch (b) {
	case MRCD_BACKEND_AUTO:
		return "auto";
	case MRCD_BACKEND_XDP:
		return "xdp";
	case MRCD_BACKEND_UDP:
		return "udp";
	}
	return "unknown";
}

/* --- value parsers: the whole value must be consumed ------------------------------------- */

static int parse_uint(const char *s, uint64_t max, uint64_t *out)
{
	uint64_t v = 0;

	if (!*s)
		return -1;
	for (; *s; s++) {
		uint64_t d = (uint64_t)(*s - '0');

		/* v * 10 + d <= max, without overflow (and d > max would underflow max - d) */
		if (*s < '0' || *s > '9' || d > max || v > (max - d) / 10)
			return -1;
		v = v * 10 + d;
	}
	*out = v;
	return 0;
}

static int parse_bool(const char *s, bool *out)
{
	static const char *const yes[] = { "yes", "true", "on", "1" };
	static const char *const no[] = { "no", "false", "off", "0" };

	for (size_t i = 0; i < 4; i++) {
		if (!strcmp(s, yes[i])) {
			*out = true;
			return 0;
		}
		if (!strcmp(s, no[i])) {
			*out = false;
			return 0;
		}
	}
	return -1;
}

static int parse_addr(const char *s, struct mrcd_addr *out)
{
	struct in_addr v4;
	struct in6_addr v6;

	memset(out, 0, sizeof(*out));
	if (inet_pton(AF_INET, s, &v4) == 1) {
		out->family = MRC_AF_INET;
		mrc_addr_from_v4(out->addr, &v4);
		return 0;
	}
	if (inet_pton(AF_INET6, s, &v6) == 1 && !mrc_addr_is_v4(v6.s6_addr)) {
		out->family = MRC_AF_INET6;
		memcpy(out->addr, &v6, 16);
		return 0;
	}
	return -1;
}

/* A bit rate: digits and an optional K, M, G or T (powers of 1000). */
static int parse_rate(const char *s, uint64_t *out)
{
	char digits[32];
	size_t n = strlen(s);
	uint64_t mult = 1, v;

	if (n == 0 || n >= sizeof(digits))
		return -1;
	memcpy(digits, s, n + 1);
	switch (digits[n - 1]) {
	case 'K':
	case 'k':
		mult = 1000ull;
		break;
	case 'M':
		mult = 1000000ull;
		break;
	case 'G':
		mult = 1000000000ull;
		break;
	case 'T':
		mult = 1000000000000ull;
		break;
	}
	if (mult != 1)
		digits[n - 1] = '\0';
	if (parse_uint(digits, UINT64_MAX / mult, &v))
		return -1;
	*out = v * mult;
	return 0;
}

/* A size in bytes: digits and an optional K, M, G or T (powers of 1024). */
static int parse_bytes(const char *s, uint64_t *out)
{
	static const char units[] = "KMGT";
	char digits[32];
	size_t n = strlen(s);
	const char *u;
	uint64_t mult = 1, v;

	if (n == 0 || n >= sizeof(digits))
		return -1;
	memcpy(digits, s, n + 1);
	u = strchr(units, digits[n - 1] & ~0x20);
	if (u && *u) {
		mult = 1ull << (10 * (1 + (u - units)));
		digits[n - 1] = '\0';
	}
	if (parse_uint(digits, UINT64_MAX / mult, &v))
		return -1;
	*out = v * mult;
	return 0;
}

/* --- keys ---------------------------------------------------------------------------------- */

typedef int (*setter)(struct mrcd_config *cfg, const char *value, char *err, size_t errlen);

static int set_backend(struct mrcd_config *cfg, const char *v, char *err, size_t errlen)
{
	for (int b = MRCD_BACKEND_AUTO; b <= MRCD_BACKEND_UDP; b++) {
		if (!strcmp(v, mrcd_backend_name((enum mrcd_backend_kind)b))) {
			cfg->backend = (enum mrcd_backend_kind)b;
			return 0;
		}
	}
	return fail(err, errlen, "backend must be auto, xdp or udp, not '%s'", v);
}

static int set_port(struct mrcd_config *cfg, const char *v, char *err, size_t errlen)
{
	uint64_t n;

	if (parse_uint(v, 65535, &n) || n == 0)
		return fail(err, errlen, "port must be a number from 1 to 65535, not '%s'", v);
	cfg->port = (uint16_t)n;
	return 0;
}

static int set_paths(struct mrcd_config *cfg, const char *v, char *err, size_t errlen)
{
	uint64_t n;

	if (parse_uint(v, MRCD_MAX_PATHS_PER_PLANE, &n) || n == 0)
		return fail(err, errlen, "paths_per_plane must be from 1 to %d, not '%s'",
			    MRCD_MAX_PATHS_PER_PLANE, v);
	cfg->paths_per_plane = (uint8_t)n;
	return 0;
}

static int set_mtu(struct mrcd_config *cfg, const char *v, char *err, size_t errlen)
{
	uint64_t n;

	/* 576: the smallest IPv4 MTU every host accepts; still room for a 256-byte payload */
	if (parse_uint(v, 65535, &n) || n < 576)
		return fail(err, errlen, "mtu must be from 576 to 65535, not '%s'", v);
	cfg->mtu = (uint16_t)n;
	return 0;
}

static int set_rx_capacity(struct mrcd_config *cfg, const char *v, char *err, size_t errlen)
{
	if (parse_rate(v, &cfg->rx_capacity_bps))
		return fail(err, errlen,
			    "rx_capacity must be a bit rate such as 100G, 25000M or 0, not '%s'", v);
	return 0;
}

/* A duration with its unit (200us, 1ms), above 0 and up to an hour. */
static int set_duration(const char *key, const char *v, uint64_t *ns, char *err, size_t errlen)
{
	if (!strchr("0123456789", v[0]) || mrc_spin_parse_budget(v, ns) || *ns == 0 ||
	    *ns == MRC_SPIN_ALWAYS)
		return fail(err, errlen, "%s must be a duration such as 200us or 1ms, not '%s'",
			    key, v);
	return 0;
}

static int set_rto_initial(struct mrcd_config *cfg, const char *v, char *err, size_t errlen)
{
	return set_duration("rto_initial", v, &cfg->rto_initial_ns, err, errlen);
}

static int set_rto_min(struct mrcd_config *cfg, const char *v, char *err, size_t errlen)
{
	return set_duration("rto_min", v, &cfg->rto_min_ns, err, errlen);
}

static int set_rto_max(struct mrcd_config *cfg, const char *v, char *err, size_t errlen)
{
	return set_duration("rto_max", v, &cfg->rto_max_ns, err, errlen);
}

/* no: sleep whenever idle; yes: never sleep; a duration: spin up to that long, adaptively */
static int set_busy_poll(struct mrcd_config *cfg, const char *v, char *err, size_t errlen)
{
	if (mrc_spin_parse_budget(v, &cfg->busy_poll_ns))
		return fail(err, errlen,
			    "busy_poll must be no, yes or a duration such as 50us, not '%s'", v);
	return 0;
}

static int set_udp_gso(struct mrcd_config *cfg, const char *v, char *err, size_t errlen)
{
	if (parse_bool(v, &cfg->udp_gso))
		return fail(err, errlen, "udp_gso must be yes or no, not '%s'", v);
	return 0;
}

static int set_workers(struct mrcd_config *cfg, const char *v, char *err, size_t errlen)
{
	char *end;
	unsigned long n;

	if (!strcmp(v, "auto")) {
		cfg->workers = 0;
		return 0;
	}
	errno = 0;
	n = strtoul(v, &end, 10);
	if (errno || *end || end == v || v[0] == '-' || n < 1 || n > MRCD_MAX_WORKERS)
		return fail(err, errlen, "workers must be auto or 1 to %u, not '%s'",
			    MRCD_MAX_WORKERS, v);
	cfg->workers = (uint8_t)n;
	return 0;
}

/* A CPU number of a `cpus` list, ending at *end. */
static bool parse_cpu(const char *s, char **end, unsigned *cpu)
{
	unsigned long n;

	if (*s < '0' || *s > '9')
		return false;
	errno = 0;
	n = strtoul(s, end, 10);
	*cpu = (unsigned)n;
	return !errno && n < MRCD_MAX_CPU;
}

/* "2-5,8": the CPUs in that order, each at most once. */
static int set_cpus(struct mrcd_config *cfg, const char *v, char *err, size_t errlen)
{
	uint16_t cpus[MRCD_MAX_WORKERS];
	unsigned n = 0;
	const char *s = v;

	while (*s) {
		unsigned lo, hi;
		char *end;

		if (!parse_cpu(s, &end, &lo))
			return fail(err, errlen, "cpus must be a list such as 0-3,8, not '%s'", v);
		hi = lo;
		if (*end == '-' && !parse_cpu(end + 1, &end, &hi))
			return fail(err, errlen, "cpus must be a list such as 0-3,8, not '%s'", v);
		if (hi < lo || (*end && *end != ','))
			return fail(err, errlen, "cpus must be a list such as 0-3,8, not '%s'", v);
		for (unsigned cpu = lo; cpu <= hi; cpu++) {
			for (unsigned i = 0; i < n; i++)
				if (cpus[i] == cpu)
					return fail(err, errlen, "cpus names CPU %u twice", cpu);
			if (n == MRCD_MAX_WORKERS)
				return fail(err, errlen, "cpus names more than %u CPUs",
					    MRCD_MAX_WORKERS);
			cpus[n++] = (uint16_t)cpu;
		}
		s = *end ? end + 1 : end;
	}
	if (!n)
		return fail(err, errlen, "cpus must name at least one CPU");
	memcpy(cfg->cpus, cpus, n * sizeof(cpus[0]));
	cfg->n_cpus = (uint8_t)n;
	return 0;
}

unsigned mrcd_workers_auto(const struct mrcd_config *cfg, const unsigned *rx_queues,
			   unsigned allowed_cpus)
{
	unsigned queues = 0, cpus = cfg->n_cpus ? cfg->n_cpus : allowed_cpus;

	for (unsigned i = 0; i < cfg->n_planes; i++)
		queues += rx_queues[i] ? rx_queues[i] : 1;
	if (queues > cpus)
		queues = cpus;
	if (queues > MRCD_MAX_WORKERS)
		queues = MRCD_MAX_WORKERS;
	return queues ? queues : 1;
}

static int set_transport(struct mrcd_config *cfg, const char *v, char *err, size_t errlen)
{
	if (strcmp(v, "metaroce") && strcmp(v, "rocev2"))
		return fail(err, errlen, "transport must be metaroce or rocev2, not '%s'", v);
	cfg->rocev2 = !strcmp(v, "rocev2");
	return 0;
}


/* metrics_listen = ADDRESS:PORT, IPv6 in brackets */
static int set_metrics_listen(struct mrcd_config *cfg, const char *v, char *err, size_t errlen)
{
	char addr[64];
	const char *colon = strrchr(v, ':'), *a = v;
	size_t alen;
	uint64_t port;

	if (!colon || colon == v)
		return fail(err, errlen, "metrics_listen must be ADDRESS:PORT, not '%s'", v);
	alen = (size_t)(colon - v);
	if (v[0] == '[' && alen >= 2 && v[alen - 1] == ']') {
		a = v + 1;
		alen -= 2;
	}
	if (alen >= sizeof(addr))
		return fail(err, errlen, "metrics_listen must be ADDRESS:PORT, not '%s'", v);
	memcpy(addr, a, alen);
	addr[alen] = '\0';
	if (parse_addr(addr, &cfg->metrics_addr))
		return fail(err, errlen, "'%s' is not an IPv4 or IPv6 address", addr);
	if (parse_uint(colon + 1, 65535, &port) || !port)
		return fail(err, errlen, "metrics port must be from 1 to 65535, not '%s'",
			    colon + 1);
	cfg->metrics_port = (uint16_t)port;
	cfg->metrics = true;
	return 0;
}

static bool valid_ifname(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n >= IF_NAMESIZE || !strcmp(s, ".") || !strcmp(s, ".."))
		return false;
	for (; *s; s++)
		if (*s == '/' || *s == ':' || *s <= ' ' || *s > '~')
			return false;
	return true;
}

/* plane = INDEX IFNAME ADDRESS */
static int set_plane(struct mrcd_config *cfg, const char *v, char *err, size_t errlen)
{
	char idx[8], ifname[64], addr[64], extra[2];
	struct mrcd_plane p;
	uint64_t n;

	memset(&p, 0, sizeof(p));
	if (sscanf(v, "%7s %63s %63s %1s", idx, ifname, addr, extra) != 3)
		return fail(err, errlen, "plane must be 'INDEX INTERFACE ADDRESS', not '%s'", v);
	if (parse_uint(idx, MRC_MAX_PLANES - 1, &n))
		return fail(err, errlen, "plane index must be from 0 to %d, not '%s'",
			    MRC_MAX_PLANES - 1, idx);
	if (!valid_ifname(ifname))
		return fail(err, errlen, "'%s' is not an interface name", ifname);
	if (parse_addr(addr, &p.addr))
		return fail(err, errlen, "'%s' is not an IPv4 or IPv6 address", addr);
	for (unsigned i = 0; i < cfg->n_planes; i++) {
		if (cfg->planes[i].index == n)
			return fail(err, errlen, "plane %u is given twice", (unsigned)n);
		if (!memcmp(cfg->planes[i].addr.addr, p.addr.addr, 16))
			return fail(err, errlen, "address %s is given to two planes", addr);
	}
	if (cfg->n_planes == MRC_MAX_PLANES)
		return fail(err, errlen, "more than %d planes", MRC_MAX_PLANES);
	p.index = (uint8_t)n;
	memcpy(p.ifname, ifname, strlen(ifname) + 1);
	cfg->planes[cfg->n_planes++] = p;
	return 0;
}

/* peer_prefix = ADDRESS/LENGTH */
/* ADDRESS/LENGTH, named `key` in errors */
static int parse_prefix(const char *key, const char *v, struct mrcd_prefix *p, char *err,
			size_t errlen)
{
	char addr[64];
	const char *slash = strchr(v, '/');
	uint64_t len;

	if (!slash || (size_t)(slash - v) >= sizeof(addr))
		return fail(err, errlen, "%s must be ADDRESS/LENGTH, not '%s'", key, v);
	memcpy(addr, v, (size_t)(slash - v));
	addr[slash - v] = '\0';
	if (parse_addr(addr, &p->addr))
		return fail(err, errlen, "'%s' is not an IPv4 or IPv6 address", addr);
	if (parse_uint(slash + 1, p->addr.family == MRC_AF_INET ? 32 : 128, &len))
		return fail(err, errlen, "prefix length '%s' is out of range for %s", slash + 1,
			    p->addr.family == MRC_AF_INET ? "IPv4" : "IPv6");
	p->len = (uint8_t)(p->addr.family == MRC_AF_INET ? 96 + len : len);
	return 0;
}

static int set_prefix(struct mrcd_config *cfg, const char *v, char *err, size_t errlen)
{
	struct mrcd_prefix p;

	if (parse_prefix("peer_prefix", v, &p, err, errlen))
		return -1;
	if (cfg->n_prefixes == MRCD_MAX_PREFIXES)
		return fail(err, errlen, "more than %d peer prefixes", MRCD_MAX_PREFIXES);
	cfg->prefixes[cfg->n_prefixes++] = p;
	return 0;
}

/* user_max_* counts: at least 1, at most the table a client could fill */
static int set_user_count(uint32_t *field, const char *key, uint64_t max, const char *v,
			  char *err, size_t errlen)
{
	uint64_t n;

	if (parse_uint(v, max, &n) || n == 0)
		return fail(err, errlen, "%s must be a number from 1 to %llu, not '%s'", key,
			    (unsigned long long)max, v);
	*field = (uint32_t)n;
	return 0;
}

static int set_user_connections(struct mrcd_config *cfg, const char *v, char *err, size_t errlen)
{
	return set_user_count(&cfg->user.connections, "user_max_connections", 256, v, err, errlen);
}

static int set_user_qps(struct mrcd_config *cfg, const char *v, char *err, size_t errlen)
{
	return set_user_count(&cfg->user.qps, "user_max_qps", MRC_CTL_CLIENT_MAX_QPS, v, err,
			      errlen);
}

static int set_user_cqs(struct mrcd_config *cfg, const char *v, char *err, size_t errlen)
{
	return set_user_count(&cfg->user.cqs, "user_max_cqs", MRC_CTL_CLIENT_MAX_CQS, v, err,
			      errlen);
}

static int set_user_mrs(struct mrcd_config *cfg, const char *v, char *err, size_t errlen)
{
	return set_user_count(&cfg->user.mrs, "user_max_mrs", MRC_CTL_CLIENT_MAX_MRS, v, err,
			      errlen);
}

static int set_user_srqs(struct mrcd_config *cfg, const char *v, char *err, size_t errlen)
{
	return set_user_count(&cfg->user.srqs, "user_max_srqs", MRC_CTL_CLIENT_MAX_SRQS, v, err,
			      errlen);
}

static int set_user_size(uint64_t *field, const char *key, const char *v, char *err,
			 size_t errlen)
{
	if (!strcmp(v, "auto")) {
		*field = 0;
		return 0;
	}
	if (parse_bytes(v, field) || *field == 0)
		return fail(err, errlen, "%s must be auto or a size such as 64G, not '%s'", key, v);
	return 0;
}

static int set_user_registered(struct mrcd_config *cfg, const char *v, char *err, size_t errlen)
{
	return set_user_size(&cfg->user.registered_bytes, "user_max_registered", v, err, errlen);
}

static int set_user_page_maps(struct mrcd_config *cfg, const char *v, char *err, size_t errlen)
{
	return set_user_size(&cfg->user.page_map_bytes, "user_max_page_maps", v, err, errlen);
}

static int set_auth(struct mrcd_config *cfg, const char *v, char *err, size_t errlen)
{
	static const char *const names[] = { "auto", "header", "off", "full" };

	for (unsigned i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(v, names[i])) {
			cfg->auth = (enum mrcd_auth_setting)i;
			return 0;
		}
	return fail(err, errlen, "auth must be auto, header, full or off, not '%s'", v);
}

static int set_path(char *field, size_t cap, const char *key, const char *v, char *err,
		    size_t errlen)
{
	if (v[0] != '/')
		return fail(err, errlen, "%s must be an absolute path, not '%s'", key, v);
	if (strlen(v) >= cap)
		return fail(err, errlen, "%s is longer than %zu bytes", key, cap - 1);
	memcpy(field, v, strlen(v) + 1);
	return 0;
}

static int set_control_socket(struct mrcd_config *cfg, const char *v, char *err, size_t errlen)
{
	return set_path(cfg->control_socket, sizeof(cfg->control_socket), "control_socket", v,
			err, errlen);
}

static int set_key_file(struct mrcd_config *cfg, const char *v, char *err, size_t errlen)
{
	return set_path(cfg->key_file, sizeof(cfg->key_file), "key_file", v, err, errlen);
}

static int set_cluster_key_file(struct mrcd_config *cfg, const char *v, char *err,
				size_t errlen)
{
	return set_path(cfg->cluster_key_file, sizeof(cfg->cluster_key_file), "cluster_key_file",
			v, err, errlen);
}

/* PUBLIC_KEY (base64, as metaroced --public-key prints it) PREFIX[,PREFIX...] */
static int set_allowed_peer(struct mrcd_config *cfg, const char *v, char *err, size_t errlen)
{
	struct mrcd_allowed_peer a = { 0 };
	char b64[64], list[512], *save = NULL;
	size_t key_len = 0;
	const char *space = strchr(v, ' ');

	if (!space || (size_t)(space - v) >= sizeof(b64) || strlen(space + 1) >= sizeof(list))
		return fail(err, errlen, "allowed_peer must be PUBLIC_KEY PREFIX[,PREFIX...], "
			    "not '%s'", v);
	memcpy(b64, v, (size_t)(space - v));
	b64[space - v] = '\0';
	if (sodium_base642bin(a.public_key, sizeof(a.public_key), b64, strlen(b64), NULL,
			      &key_len, NULL, sodium_base64_VARIANT_ORIGINAL) ||
	    key_len != sizeof(a.public_key))
		return fail(err, errlen, "'%s' is not a public key (44 characters of base64, as "
			    "metaroced --public-key prints)", b64);
	memcpy(list, space + 1, strlen(space + 1) + 1);
	for (char *tok = strtok_r(list, ", ", &save); tok; tok = strtok_r(NULL, ", ", &save)) {
		if (a.n_prefixes == sizeof(a.prefixes) / sizeof(a.prefixes[0]))
			return fail(err, errlen, "allowed_peer: more than %zu prefixes",
				    sizeof(a.prefixes) / sizeof(a.prefixes[0]));
		if (parse_prefix("allowed_peer's prefix", tok, &a.prefixes[a.n_prefixes++], err,
				 errlen))
			return -1;
	}
	if (!a.n_prefixes)
		return fail(err, errlen, "allowed_peer %s names no prefix it may use", b64);
	for (unsigned i = 0; i < cfg->n_allowed; i++)
		if (!memcmp(cfg->allowed[i].public_key, a.public_key, sizeof(a.public_key)))
			return fail(err, errlen, "allowed_peer %s is named twice", b64);
	if (cfg->n_allowed == MRCD_MAX_ALLOWED_PEERS)
		return fail(err, errlen, "more than %d allowed peers: use a cluster_key_file",
			    MRCD_MAX_ALLOWED_PEERS);
	cfg->allowed[cfg->n_allowed++] = a;
	return 0;
}

static const struct {
	const char *key;
	setter set;
} keys[] = {
	{ "backend", set_backend },	      { "port", set_port },
	{ "plane", set_plane },		      { "paths_per_plane", set_paths },
	{ "mtu", set_mtu },		      { "rx_capacity", set_rx_capacity },
	{ "rto_initial", set_rto_initial },   { "rto_min", set_rto_min },
	{ "rto_max", set_rto_max },
	{ "peer_prefix", set_prefix },	      { "control_socket", set_control_socket },
	{ "busy_poll", set_busy_poll },	      { "metrics_listen", set_metrics_listen },
	{ "transport", set_transport },	      { "udp_gso", set_udp_gso },
	{ "workers", set_workers },	      { "cpus", set_cpus },
	{ "user_max_connections", set_user_connections },
	{ "user_max_qps", set_user_qps },     { "user_max_cqs", set_user_cqs },
	{ "user_max_mrs", set_user_mrs },     { "user_max_srqs", set_user_srqs },
	{ "user_max_registered", set_user_registered },
	{ "user_max_page_maps", set_user_page_maps },
	{ "auth", set_auth },		      { "key_file", set_key_file },
	{ "cluster_key_file", set_cluster_key_file },
	{ "allowed_peer", set_allowed_peer },
};
#define N_KEYS (sizeof(keys) / sizeof(keys[0]))

/* Edit distance, for "did you mean"; both strings are short keys. */
static unsigned distance(const char *a, const char *b)
{
	unsigned row[32], n = (unsigned)strlen(b);

	if (n >= 32 || strlen(a) >= 32)
		return 99;
	for (unsigned j = 0; j <= n; j++)
		row[j] = j;
	for (unsigned i = 1; a[i - 1]; i++) {
		unsigned diag = row[0];

		row[0] = i;
		for (unsigned j = 1; j <= n; j++) {
			unsigned up = row[j], best = diag + (a[i - 1] != b[j - 1]);

			if (up + 1 < best)
				best = up + 1;
			if (row[j - 1] + 1 < best)
				best = row[j - 1] + 1;
			diag = up;
			row[j] = best;
		}
	}
	return row[n];
}

int mrcd_config_set(struct mrcd_config *cfg, const char *key, const char *value, char *err,
		    size_t errlen)
{
	const char *closest = NULL;
	unsigned best = 3;

	for (size_t i = 0; i < N_KEYS; i++) {
		unsigned d;

		if (!strcmp(key, keys[i].key))
			return keys[i].set(cfg, value, err, errlen);
		d = distance(key, keys[i].key);
		if (d < best) {
			best = d;
			closest = keys[i].key;
		}
	}
	if (closest)
		return fail(err, errlen, "unknown key '%s' (did you mean '%s'?)", key, closest);
	return fail(err, errlen, "unknown key '%s'", key);
}

static char *trim(char *s)
{
	char *end;

	while (*s == ' ' || *s == '\t')
		s++;
	end = s + strlen(s);
	while (end > s && (end[-1] == ' ' || end[-1] == '\t' || end[-1] == '\r'))
		*--end = '\0';
	return s;
}

int mrcd_config_parse(struct mrcd_config *cfg, const char *name, const char *text, size_t len,
		      char *err, size_t errlen)
{
	struct mrcd_config next = *cfg;
	char line[MAX_LINE + 1], msg[256];
	unsigned lineno = 0;
	size_t pos = 0;

	while (pos < len) {
		size_t n = 0;
		char *s, *eq;

		lineno++;
		while (pos < len && text[pos] != '\n') {
			if (text[pos] == '\0')
				return fail(err, errlen, "%s:%u: a NUL byte in the file", name,
					    lineno);
			if (n == MAX_LINE)
				return fail(err, errlen, "%s:%u: line longer than %d bytes", name,
					    lineno, MAX_LINE);
			line[n++] = text[pos++];
		}
		pos++; /* the newline */
		line[n] = '\0';
		if ((s = strchr(line, '#')))
			*s = '\0';
		s = trim(line);
		if (!*s)
			continue;
		eq = strchr(s, '=');
		if (!eq)
			return fail(err, errlen, "%s:%u: expected 'key = value', got '%s'", name,
				    lineno, s);
		*eq = '\0';
		if (mrcd_config_set(&next, trim(s), trim(eq + 1), msg, sizeof(msg)))
			return fail(err, errlen, "%s:%u: %s", name, lineno, msg);
	}
	*cfg = next;
	return 0;
}

int mrcd_config_load(struct mrcd_config *cfg, const char *path, char *err, size_t errlen)
{
	char *text;
	long size;
	FILE *f = fopen(path, "rb");
	int rc;

	if (!f)
		return fail(err, errlen, "%s: %s", path, strerror(errno));
	if (fseek(f, 0, SEEK_END) || (size = ftell(f)) < 0 || fseek(f, 0, SEEK_SET)) {
		fclose(f);
		return fail(err, errlen, "%s: cannot read: %s", path, strerror(errno));
	}
	if (size > 1 << 20) {
		fclose(f);
		return fail(err, errlen, "%s: larger than 1 MiB, not a configuration file", path);
	}
	text = malloc((size_t)size + 1);
	if (!text || fread(text, 1, (size_t)size, f) != (size_t)size) {
		free(text);
		fclose(f);
		return fail(err, errlen, "%s: cannot read", path);
	}
	fclose(f);
	rc = mrcd_config_parse(cfg, path, text, (size_t)size, err, errlen);
	free(text);
	return rc;
}

int mrcd_config_check(const struct mrcd_config *cfg, char *err, size_t errlen)
{
	if (cfg->n_planes == 0)
		return fail(err, errlen, "no plane is configured: add 'plane = 0 IFNAME ADDRESS'");
	if (cfg->rto_min_ns > cfg->rto_initial_ns || cfg->rto_initial_ns > cfg->rto_max_ns)
		return fail(err, errlen, "rto_min (%lluus) <= rto_initial (%lluus) <= rto_max "
			    "(%lluus) does not hold", (unsigned long long)cfg->rto_min_ns / 1000,
			    (unsigned long long)cfg->rto_initial_ns / 1000,
			    (unsigned long long)cfg->rto_max_ns / 1000);
	if ((unsigned)cfg->n_planes * cfg->paths_per_plane > 32)
		return fail(err, errlen, "%u planes x %u paths per plane exceeds 32 paths per QP",
			    cfg->n_planes, cfg->paths_per_plane);
	if ((cfg->auth == MRCD_AUTH_HEADER || cfg->auth == MRCD_AUTH_FULL) &&
	    !cfg->cluster_key_file[0] && !cfg->n_allowed)
		return fail(err, errlen, "auth = %s needs a cluster_key_file or allowed_peer "
			    "lines to know whom to trust",
			    cfg->auth == MRCD_AUTH_FULL ? "full" : "header");
	return 0;
}

/*
 * With no peer_prefix configured, only the subnets of the daemon's own plane addresses are
 * admitted (/24 for IPv4, /64 for IPv6): a default that does not answer every address
 * (SPEC R-124), yet lets daemons on the same plane subnets find each other.
 */
bool mrcd_config_admits(const struct mrcd_config *cfg, const uint8_t addr[16])
{
	if (cfg->n_prefixes == 0) {
		for (unsigned i = 0; i < cfg->n_planes; i++) {
			const struct mrcd_addr *a = &cfg->planes[i].addr;

			if (mrc_addr_in_prefix(addr, a->addr, a->family == MRC_AF_INET ? 96 + 24 : 64))
				return true;
		}
		return false;
	}
	for (unsigned i = 0; i < cfg->n_prefixes; i++)
		if (mrc_addr_in_prefix(addr, cfg->prefixes[i].addr.addr, cfg->prefixes[i].len))
			return true;
	return false;
}

static const char *render_addr(const struct mrcd_addr *a, char *buf, size_t len)
{
	if (a->family == MRC_AF_INET)
		inet_ntop(AF_INET, a->addr + 12, buf, (socklen_t)len);
	else
		inet_ntop(AF_INET6, a->addr, buf, (socklen_t)len);
	return buf;
}

size_t mrcd_config_render(const struct mrcd_config *cfg, char *buf, size_t cap)
{
	char a[INET6_ADDRSTRLEN];
	size_t n = 0;
	int k;

#define EMIT(...)                                                                             \
	do {                                                                                  \
		k = snprintf(buf + n, n < cap ? cap - n : 0, __VA_ARGS__);                    \
		if (k > 0)                                                                    \
			n = n + (size_t)k < cap ? n + (size_t)k : cap;                        \
	} while (0)
	EMIT("backend = %s\n", mrcd_backend_name(cfg->backend));
	EMIT("port = %u\n", cfg->port);
	for (unsigned i = 0; i < cfg->n_planes; i++)
		EMIT("plane = %u %s %s\n", cfg->planes[i].index, cfg->planes[i].ifname,
		     render_addr(&cfg->planes[i].addr, a, sizeof(a)));
	EMIT("paths_per_plane = %u\n", cfg->paths_per_plane);
	EMIT("mtu = %u\n", cfg->mtu);
	EMIT("rx_capacity = %llu\n", (unsigned long long)cfg->rx_capacity_bps);
	EMIT("rto_initial = %lluns\n", (unsigned long long)cfg->rto_initial_ns);
	EMIT("rto_min = %lluns\n", (unsigned long long)cfg->rto_min_ns);
	EMIT("rto_max = %lluns\n", (unsigned long long)cfg->rto_max_ns);
	for (unsigned i = 0; i < cfg->n_prefixes; i++)
		EMIT("peer_prefix = %s/%u\n", render_addr(&cfg->prefixes[i].addr, a, sizeof(a)),
		     cfg->prefixes[i].addr.family == MRC_AF_INET ? cfg->prefixes[i].len - 96u
							       : cfg->prefixes[i].len);
	EMIT("control_socket = %s\n", cfg->control_socket);
	if (cfg->busy_poll_ns == 0 || cfg->busy_poll_ns == MRC_SPIN_ALWAYS)
		EMIT("busy_poll = %s\n", cfg->busy_poll_ns ? "yes" : "no");
	else if (cfg->busy_poll_ns % 1000)
		EMIT("busy_poll = %lluns\n", (unsigned long long)cfg->busy_poll_ns);
	else
		EMIT("busy_poll = %lluus\n", (unsigned long long)cfg->busy_poll_ns / 1000);
	EMIT("udp_gso = %s\n", cfg->udp_gso ? "yes" : "no");
	if (cfg->workers)
		EMIT("workers = %u\n", cfg->workers);
	else
		EMIT("workers = auto\n");
	if (cfg->n_cpus) {
		EMIT("cpus = ");
		for (unsigned i = 0; i < cfg->n_cpus; i++)
			EMIT("%s%u", i ? "," : "", cfg->cpus[i]);
		EMIT("\n");
	}
	EMIT("transport = %s\n", cfg->rocev2 ? "rocev2" : "metaroce");
	if (cfg->metrics)
		EMIT(cfg->metrics_addr.family == MRC_AF_INET ? "metrics_listen = %s:%u\n"
							      : "metrics_listen = [%s]:%u\n",
		     render_addr(&cfg->metrics_addr, a, sizeof(a)), cfg->metrics_port);
	EMIT("user_max_connections = %u\n", cfg->user.connections);
	EMIT("user_max_qps = %u\n", cfg->user.qps);
	EMIT("user_max_cqs = %u\n", cfg->user.cqs);
	EMIT("user_max_mrs = %u\n", cfg->user.mrs);
	EMIT("user_max_srqs = %u\n", cfg->user.srqs);
	if (cfg->user.registered_bytes)
		EMIT("user_max_registered = %llu\n", (unsigned long long)cfg->user.registered_bytes);
	else
		EMIT("user_max_registered = auto\n");
	if (cfg->user.page_map_bytes)
		EMIT("user_max_page_maps = %llu\n", (unsigned long long)cfg->user.page_map_bytes);
	else
		EMIT("user_max_page_maps = auto\n");
	EMIT("auth = %s\n", cfg->auth == MRCD_AUTH_HEADER ? "header"
			    : cfg->auth == MRCD_AUTH_FULL ? "full"
			    : cfg->auth == MRCD_AUTH_OFF  ? "off"
							  : "auto");
	EMIT("key_file = %s\n", cfg->key_file);
	if (cfg->cluster_key_file[0])
		EMIT("cluster_key_file = %s\n", cfg->cluster_key_file);
	for (unsigned i = 0; i < cfg->n_allowed; i++) {
		const struct mrcd_allowed_peer *p = &cfg->allowed[i];
		char b64[sodium_base64_ENCODED_LEN(32, sodium_base64_VARIANT_ORIGINAL)];

		sodium_bin2base64(b64, sizeof(b64), p->public_key, sizeof(p->public_key),
				  sodium_base64_VARIANT_ORIGINAL);
		EMIT("allowed_peer = %s ", b64);
		for (unsigned j = 0; j < p->n_prefixes; j++)
			EMIT("%s%s/%u", j ? "," : "", render_addr(&p->prefixes[j].addr, a, sizeof(a)),
			     p->prefixes[j].addr.family == MRC_AF_INET ? p->prefixes[j].len - 96u
								       : p->prefixes[j].len);
		EMIT("\n");
	}
#undef EMIT
	return n;
}
