/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * metaroced's configuration: /etc/metaroce/metaroced.conf by default, command-line flags on
 * top. The file is lines of `key = value`; `#` starts a comment; keys that name a list (plane,
 * peer_prefix) repeat. Every error names the file, the line and what is wrong, and nothing of
 * a file with an error is applied.
 *
 *     backend = auto                      # auto (udp today: loop.c) | xdp | udp
 *     port = 4792                         # UDP port of MetaRoCE on every plane
 *     plane = 0 eth1 198.18.0.1           # index, interface, address (IPv4 or IPv6)
 *     plane = 1 eth2 198.19.0.1
 *     paths_per_plane = 4
 *     mtu = 9000                          # IP MTU of the plane links
 *     rx_capacity = 100G                  # bit/s shared out by rate hints; 0: no hints
 *     rto_initial = 1ms                   # a path's RTO before its first RTT sample, and
 *     rto_min = 200us                     #   its bounds (SPEC 7.3, 16): for new QPs
 *     rto_max = 100ms
 *     peer_prefix = 198.18.0.0/15         # who may discover us (repeat for more)
 *     control_socket = /run/metaroce/metaroced.sock
 *     busy_poll = no                      # no | yes | 50us: spin that long when idle
 *     workers = auto                      # threads running QPs; auto: one per receive
 *                                         #   queue of the planes, at most one per CPU
 *     cpus = 2-5                          # pin worker i to the i-th of these CPUs
 *     udp_gso = yes                       # udp sockets: trains as one message (GSO, GRO)
 *     transport = metaroce                # metaroce | rocev2: the baseline, for comparison
 *     metrics_listen = 127.0.0.1:9464     # Prometheus /metrics over HTTP; off when unset
 *     user_max_connections = 64           # what one user (uid) may hold, over all its
 *     user_max_qps = 2048                 #   connections; root and the daemon's own user
 *     user_max_cqs = 2048                 #   are not limited
 *     user_max_mrs = 8192                 # memory regions and windows
 *     user_max_srqs = 512
 *     user_max_registered = auto          # bytes of regions; auto: the host's memory
 *     user_max_page_maps = auto           # XDP page maps; auto: half the host's memory
 *     auth = auto                         # auto | header | full | off: packets authenticated
 *                                         #   (SPEC 14.6), full: and their payloads encrypted;
 *                                         #   auto: header once a key says whom to trust
 *     key_file = /var/lib/metaroce/private.key  # this daemon's X25519 key, made on first start
 *     cluster_key_file = /etc/metaroce/cluster.key  # 32 random bytes every member holds
 *     allowed_peer = PUBLIC_KEY 198.18.0.2/32,198.19.0.2/32  # a peer by key, and where it is
 */
#ifndef METAROCE_DAEMON_CONFIG_H
#define METAROCE_DAEMON_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <net/if.h>
#include <sys/un.h>

#include <metaroce/wire.h>

#define MRCD_CONFIG_DEFAULT_PATH "/etc/metaroce/metaroced.conf"
#define MRCD_CONTROL_SOCKET_DEFAULT "/run/metaroce/metaroced.sock"
#define MRCD_MAX_PREFIXES 32
#define MRCD_MAX_PATHS_PER_PLANE 8
#define MRCD_MAX_ALLOWED_PEERS 64
#define MRCD_KEY_FILE_DEFAULT "/var/lib/metaroce/private.key"
#define MRCD_MAX_WORKERS 64
#define MRCD_MAX_CPU 4096 /* the highest CPU number `cpus` may name, less one */

enum mrcd_backend_kind {
	MRCD_BACKEND_AUTO = 0, /* the faster where both run: udp today (loop.c says why) */
	MRCD_BACKEND_XDP,
	MRCD_BACKEND_UDP,
};

struct mrcd_addr {
	uint8_t family; /* MRC_AF_INET or MRC_AF_INET6 */
	uint8_t addr[16];	/* IPv4 as IPv4-mapped IPv6, as on the wire */
};

struct mrcd_plane {
	uint8_t index;
	char ifname[IF_NAMESIZE];
	struct mrcd_addr addr;
};

struct mrcd_prefix {
	struct mrcd_addr addr;
	uint8_t len; /* in bits of the 16-byte form: an IPv4 /15 is 96 + 15 */
};

enum mrcd_auth_setting {
	MRCD_AUTH_AUTO = 0, /* header with a cluster key or allowed peers, else off, loudly */
	MRCD_AUTH_HEADER,
	MRCD_AUTH_OFF,
	MRCD_AUTH_FULL,	    /* header, and every packet sealed: payloads encrypted */
};

/* A peer allowed by its public key, and the prefixes it may send from and announce. */
struct mrcd_allowed_peer {
	uint8_t public_key[32];
	uint8_t n_prefixes;
	struct mrcd_prefix prefixes[8];
};

/* What one user may hold over all its connections [issue 20]; 0 for the two sizes: auto. */
struct mrcd_user_limits {
	uint32_t connections, qps, cqs, mrs, srqs;
	uint64_t registered_bytes, page_map_bytes;
};

struct mrcd_config {
	enum mrcd_backend_kind backend;
	uint16_t port;
	uint8_t n_planes;
	struct mrcd_plane planes[MRC_MAX_PLANES];
	uint8_t paths_per_plane;
	uint16_t mtu;
	uint64_t rx_capacity_bps;
	uint64_t rto_initial_ns, rto_min_ns, rto_max_ns; /* SPEC 7.3's defaults unless set */
	uint8_t n_prefixes;
	struct mrcd_prefix prefixes[MRCD_MAX_PREFIXES];
	char control_socket[sizeof(((struct sockaddr_un *)0)->sun_path)];
	uint64_t busy_poll_ns;	   /* spin up to this long when idle; 0: sleep at once;
				      MRC_SPIN_ALWAYS (shm/spin.h): never sleep */
	bool udp_gso;		   /* udp sockets send equal datagrams of a path as one message */
	uint8_t workers;	   /* worker threads; 0: auto (mrcd_workers_auto) */
	uint8_t n_cpus;		   /* cpus: worker i runs on cpus[i % n_cpus]; 0: not pinned */
	uint16_t cpus[MRCD_MAX_WORKERS];
	bool rocev2;		   /* transport = rocev2: the engine's baseline mode */
	bool metrics;		   /* metrics_listen is set */
	struct mrcd_addr metrics_addr;
	uint16_t metrics_port;
	struct mrcd_user_limits user;
	enum mrcd_auth_setting auth;
	char key_file[256];
	char cluster_key_file[256]; /* empty: none */
	uint8_t n_allowed;
	struct mrcd_allowed_peer allowed[MRCD_MAX_ALLOWED_PEERS];
};

void mrcd_config_default(struct mrcd_config *cfg);

/*
 * workers = auto: one per receive queue of the planes' interfaces (rx_queues[i] for plane
 * i), at most one per CPU the daemon may run on (`cpus`, else its affinity: allowed_cpus),
 * at least one.
 */
unsigned mrcd_workers_auto(const struct mrcd_config *cfg, const unsigned *rx_queues,
			   unsigned allowed_cpus);

/*
 * Applies `text` (a whole file's contents) on top of *cfg. On error returns -1 with a message
 * "NAME:LINE: what" in err, and *cfg unchanged.
 */
int mrcd_config_parse(struct mrcd_config *cfg, const char *name, const char *text, size_t len,
		      char *err, size_t errlen);

/* Reads and parses a file; a missing file is an error that says so. */
int mrcd_config_load(struct mrcd_config *cfg, const char *path, char *err, size_t errlen);

/* One `key = value`, as from a command-line flag. Lists (plane, peer_prefix) append. */
int mrcd_config_set(struct mrcd_config *cfg, const char *key, const char *value, char *err,
		    size_t errlen);

/* Whole-configuration rules (at least one plane, ...); message in err. */
int mrcd_config_check(const struct mrcd_config *cfg, char *err, size_t errlen);

/* True when addr lies in one of the configured peer prefixes (SPEC R-123). */
bool mrcd_config_admits(const struct mrcd_config *cfg, const uint8_t addr[16]);

const char *mrcd_backend_name(enum mrcd_backend_kind b);

/* Whether packets are authenticated: auth = header, or auto with something to trust. */
bool mrcd_config_authenticates(const struct mrcd_config *cfg);

/* The configuration as a file the parser reads back to the same settings (config show). */
size_t mrcd_config_render(const struct mrcd_config *cfg, char *buf, size_t cap);

#endif /* METAROCE_DAEMON_CONFIG_H */
