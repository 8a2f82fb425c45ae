/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * metaroced: the MetaRoCE transport daemon of one host.
 *
 *   metaroced [-c FILE] [--set KEY=VALUE]... [--discover ADDRESS]... [-v] [-V]
 *   metaroced [-c FILE] [--set KEY=VALUE]... --public-key
 *
 * The configuration file (default /etc/metaroce/metaroced.conf) is read first, then every
 * --set on top, in order. --discover asks a peer for its planes at start, as a QP naming that
 * address would. --public-key prints this daemon's public key (from key_file, made there if
 * it does not exist yet), what its peers' allowed_peer lines name, and exits. Exit status: 0 after a clean stop, 1 when the daemon could not start, 2 for
 * a usage or configuration error.
 */
#include <arpa/inet.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <metaroce/ctl.h>

#include "io/daemon.h"
#include "log.h"

#define MAX_DISCOVER 16

static void usage(FILE *f)
{
	fprintf(f, "usage: metaroced [-c FILE] [--set KEY=VALUE]... [--discover ADDRESS]... [-v]\n"
		   "  -c, --config FILE        configuration file (default %s)\n"
		   "  -s, --set KEY=VALUE      a configuration setting on top of the file\n"
		   "  -d, --discover ADDRESS   ask this peer for its planes at start\n"
		   "  -k, --public-key         print this daemon's public key (made if new), exit\n"
		   "  -v, --verbose            log debug messages too\n"
		   "  -V, --version            print the version and exit\n"
		   "  -h, --help\n",
		   MRCD_CONFIG_DEFAULT_PATH);
}

/* --discover: the peer table is the control thread's, the workers stopped meanwhile. */
static int discover_peer(struct mrcd *d, const struct mrcd_addr *addr)
{
	int err;

	mrcd_workers_pause(d);
	err = mrcd_core_discover(&d->core, addr, mrcd_now_ns());
	mrcd_workers_resume(d);
	return err;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "set", required_argument, NULL, 's' },
		{ "discover", required_argument, NULL, 'd' },
		{ "public-key", no_argument, NULL, 'k' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	const char *config_path = NULL, *sets[64], *discover[MAX_DISCOVER];
	unsigned n_sets = 0, n_discover = 0;
	bool public_key = false;
	struct mrcd_config cfg;
	struct mrcd d;
	char err[512];
	int c, rc;

	while ((c = getopt_long(argc, argv, "c:s:d:kvVh", opts, NULL)) != -1) {
		switch (c) {
		case 'c':
			config_path = optarg;
			break;
		case 's':
			if (n_sets == sizeof(sets) / sizeof(sets[0])) {
				fprintf(stderr, "metaroced: too many --set options\n");
				return 2;
			}
			sets[n_sets++] = optarg;
			break;
		case 'd':
			if (n_discover == MAX_DISCOVER) {
				fprintf(stderr, "metaroced: at most %d --discover options\n",
					MAX_DISCOVER);
				return 2;
			}
			discover[n_discover++] = optarg;
			break;
		case 'k':
			public_key = true;
			break;
		case 'v':
			mrcd_log_level(LOG_DEBUG);
			break;
		case 'V':
			printf("metaroced %s (wire protocol %u, client ABI %u)\n", METAROCE_VERSION,
			       MRC_WIRE_VERSION, MRC_CTL_CLIENT_ABI);
			return 0;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind != argc) {
		fprintf(stderr, "metaroced: unexpected argument '%s'\n", argv[optind]);
		usage(stderr);
		return 2;
	}
	mrcd_config_default(&cfg);
	/* the default file may be absent when everything comes from --set; a named one may not */
	if (config_path || access(MRCD_CONFIG_DEFAULT_PATH, F_OK) == 0) {
		if (!config_path)
			config_path = MRCD_CONFIG_DEFAULT_PATH;
		if (mrcd_config_load(&cfg, config_path, err, sizeof(err))) {
			fprintf(stderr, "metaroced: %s\n", err);
			return 2;
		}
	}
	for (unsigned i = 0; i < n_sets; i++) {
		char key[64];
		const char *eq = strchr(sets[i], '=');

		if (!eq || (size_t)(eq - sets[i]) >= sizeof(key)) {
			fprintf(stderr, "metaroced: --set wants KEY=VALUE, not '%s'\n", sets[i]);
			return 2;
		}
		memcpy(key, sets[i], (size_t)(eq - sets[i]));
		key[eq - sets[i]] = '\0';
		if (mrcd_config_set(&cfg, key, eq + 1, err, sizeof(err))) {
			fprintf(stderr, "metaroced: --set %s: %s\n", sets[i], err);
			return 2;
		}
	}
	if (public_key) {
		char key[MRCD_KEY_B64_LEN];

		if (mrcd_keys_public(cfg.key_file, key, err, sizeof(err))) {
			fprintf(stderr, "metaroced: %s\n", err);
			return 1;
		}
		printf("%s\n", key);
		return 0;
	}
	if (mrcd_config_check(&cfg, err, sizeof(err))) {
		fprintf(stderr, "metaroced: %s\n", err);
		return 2;
	}
	if (mrcd_start(&d, &cfg, config_path, err, sizeof(err))) {
		mrcd_log(LOG_ERR, "cannot start: %s", err);
		return 1;
	}
	for (unsigned i = 0; i < n_discover; i++) {
		struct mrcd_config tmp;
		char plane[96];

		/* reuse the configuration's address parser through a throwaway plane */
		mrcd_config_default(&tmp);
		snprintf(plane, sizeof(plane), "0 x %s", discover[i]);
		if (mrcd_config_set(&tmp, "plane", plane, err, sizeof(err)) ||
		    discover_peer(&d, &tmp.planes[0].addr)) {
			mrcd_log(LOG_ERR, "--discover %s: not an address, the peer table is full, "
				 "or no allowed_peer may answer there", discover[i]);
			mrcd_stop(&d);
			return 2;
		}
	}
	rc = mrcd_run(&d);
	mrcd_stop(&d);
	return rc ? 1 : 0;
}
