/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
#include "path.h"

int mrc_sched_pick(const struct mrc_path *paths, unsigned n_paths, unsigned *cursor)
{
	return mrc_sched_pick_except(paths, n_paths, cursor, -1);
}

/*
 * Plain rotation over the paths with room, not "most free window first": a QP that is not
 * window-bound would otherwise send everything on whichever path's window had grown, the
 * others would never fill, and a window grows only when it fills, so the spray would
 * collapse onto one path for good. Rotation fills small windows first, so they grow.
 */
int mrc_sched_pick_except(const struct mrc_path *paths, unsigned n_paths, unsigned *cursor,
			  int except)
{
	if (n_paths == 0)
		return -1;
	for (unsigned k = 0; k < n_paths; k++) {
		unsigned i = (*cursor + k) % n_paths;

		if ((int)i == except || !mrc_path_usable(&paths[i]) ||
		    mrc_path_free_window(&paths[i]) == 0)
			continue;
		*cursor = (i + 1) % n_paths;
		return (int)i;
	}
	return -1;
}
