/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * libFuzzer harness for metaroced's configuration parser (daemon/config.c). Oracles: a file
 * that parses leaves a configuration whose strings are terminated and whose counts are in
 * range; a file that does not parse leaves the configuration untouched and says why.
 */
#include <stdlib.h>
#include <string.h>

#include "config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct mrcd_config cfg, before;
	char err[256];
	char *text = malloc(size ? size : 1);

	if (!text)
		abort();
	memcpy(text, data, size);
	mrcd_config_default(&cfg);
	before = cfg;
	err[0] = '\0';
	if (mrcd_config_parse(&cfg, "fuzz.conf", text, size, err, sizeof(err)) == 0) {
		if (cfg.n_planes > MRC_MAX_PLANES || cfg.n_prefixes > MRCD_MAX_PREFIXES ||
		    cfg.paths_per_plane == 0 || cfg.paths_per_plane > MRCD_MAX_PATHS_PER_PLANE ||
		    cfg.port == 0 || cfg.mtu < 576 || cfg.control_socket[0] != '/' ||
		    !memchr(cfg.control_socket, '\0', sizeof(cfg.control_socket)))
			abort();
		for (unsigned i = 0; i < cfg.n_planes; i++)
			if (!memchr(cfg.planes[i].ifname, '\0', sizeof(cfg.planes[i].ifname)) ||
			    cfg.planes[i].index >= MRC_MAX_PLANES)
				abort();
		(void)mrcd_config_check(&cfg, err, sizeof(err));
	} else if (memcmp(&cfg, &before, sizeof(cfg)) != 0 || strncmp(err, "fuzz.conf:", 10)) {
		abort();
	}
	free(text);
	return 0;
}
