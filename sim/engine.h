/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The engine's C headers as the simulator's C++ sees them: C's _Static_assert is C++'s
 * static_assert, the engine's functions have C linkage, and C's habit of a function named as
 * the struct it returns (mrc_conn_stats) is no shadowing to C++'s -Wshadow here. The one way
 * sim/ includes them.
 */
#ifndef METAROCE_SIM_ENGINE_H
#define METAROCE_SIM_ENGINE_H

#define _Static_assert static_assert
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wshadow"
extern "C" {
#include "proto/codec.h"
#include "proto/conn.h"
#include "proto/ratehint.h"
}
#pragma GCC diagnostic pop
#undef _Static_assert

#endif
