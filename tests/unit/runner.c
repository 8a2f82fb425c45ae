/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Runs every unit suite. libcheck honours CK_RUN_SUITE=<suite> and CK_RUN_CASE=<case> to run
 * one of them, CK_FORK=no to debug in one process, and CK_VERBOSITY=verbose to list each test.
 */
#include <stdlib.h>

#include "suites.h"

int main(void)
{
	SRunner *runner = srunner_create(checksum_suite());
	int failed;

	srunner_add_suite(runner, codec_suite());
	srunner_add_suite(runner, sack_suite());
	srunner_add_suite(runner, rtt_suite());
	srunner_add_suite(runner, cc_aimd_suite());
	srunner_add_suite(runner, sched_suite());
	srunner_add_suite(runner, loss_suite());
	srunner_add_suite(runner, random_suite());
	srunner_add_suite(runner, ratehint_suite());
	srunner_add_suite(runner, drain_suite());
	srunner_add_suite(runner, peer_suite());
	srunner_add_suite(runner, config_suite());
	srunner_add_suite(runner, ring_suite());
	srunner_add_suite(runner, share_suite());
	srunner_add_suite(runner, backend_udp_suite());
	srunner_add_suite(runner, conn_suite());
	srunner_add_suite(runner, conn_errors_suite());
	srunner_add_suite(runner, forgery_suite());
	srunner_add_suite(runner, auth_suite());
	srunner_add_suite(runner, atomics_suite());
	srunner_add_suite(runner, ud_suite());
	srunner_add_suite(runner, users_suite());
	srunner_add_suite(runner, windows_suite());
	srunner_add_suite(runner, linger_suite());
	srunner_add_suite(runner, core_sched_suite());
	srunner_add_suite(runner, spin_suite());
	srunner_add_suite(runner, core_pair_suite());
	srunner_add_suite(runner, core_ud_suite());
	srunner_add_suite(runner, cm_suite());
	srunner_add_suite(runner, core_cm_suite());
	srunner_add_suite(runner, neigh_suite());
	srunner_run_all(runner, CK_ENV);
	failed = srunner_ntests_failed(runner);
	srunner_free(runner);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
