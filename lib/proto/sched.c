/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
#include "path.h"

int mrc_sched_pick(const struct mrc_path *paths, unsigned n_paths, unsigned *cursor)
{
	return mrc_sched_pick_except(paths, n_paths, cursor, -1);
}

int mrc_sched_pick_except(const struct mrc_path *paths, unsigned n_paths, unsigned *cursor,
			  int except)
{
	uint32_t best_free = 0;
	int best = -1;

	if (n_paths == 0)
		return -1;
	for (unsigned k = 0; k < n_paths; k++) {
		unsigned i = (*cursor + k) % n_paths;
		uint32_t free_window;

		if ((int)i == except || !mrc_path_usable(&paths[i]))
			continue;
		free_window = mrc_path_free_window(&paths[i]);
		if (free_window > best_free) {
			best_free = free_window;
			best = (int)i;
		}
	}
	if (best >= 0)
		*cursor = ((unsigned)best + 1) % n_paths;
	return best;
}
