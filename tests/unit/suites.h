/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* One libcheck suite per module; tests/unit/runner.c runs them all, or CK_RUN_SUITE=name. */
#ifndef METAROCE_TESTS_UNIT_SUITES_H
#define METAROCE_TESTS_UNIT_SUITES_H

#include <check.h>

Suite *atomics_suite(void);
Suite *backend_udp_suite(void);
Suite *cc_aimd_suite(void);
Suite *checksum_suite(void);
Suite *cm_suite(void);
Suite *codec_suite(void);
Suite *config_suite(void);
Suite *conn_suite(void);
Suite *conn_errors_suite(void);
Suite *forgery_suite(void);
Suite *auth_suite(void);
Suite *core_cm_suite(void);
Suite *core_pair_suite(void);
Suite *core_sched_suite(void);
Suite *core_ud_suite(void);
Suite *linger_suite(void);
Suite *loss_suite(void);
Suite *neigh_suite(void);
Suite *peer_suite(void);
Suite *random_suite(void);
Suite *ratehint_suite(void);
Suite *drain_suite(void);
Suite *ring_suite(void);
Suite *rtt_suite(void);
Suite *sack_suite(void);
Suite *sched_suite(void);
Suite *share_suite(void);
Suite *spin_suite(void);
Suite *ud_suite(void);
Suite *users_suite(void);
Suite *windows_suite(void);

#endif
