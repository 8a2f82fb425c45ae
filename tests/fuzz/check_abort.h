/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * libcheck's assertions as plain aborts, taking <check.h>'s place (its include guard) for the
 * unit tests' virtual-time worlds when a fuzz harness runs them: libcheck reports through its
 * test runner, which a fuzzer has none of, and an abort is what libFuzzer catches.
 */
#ifndef CHECK_H
#define CHECK_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

typedef struct Suite Suite;

#define ck_abort_msg(...) (fprintf(stderr, __VA_ARGS__), fputc('\n', stderr), abort())
#define ck_assert_msg(cond, ...) ((cond) ? (void)0 : (void)ck_abort_msg(__VA_ARGS__))
#define ck_assert(cond) ck_assert_msg(cond, "%s", #cond)
#define ck_int_(a, op, b) ck_assert_msg((intmax_t)(a) op (intmax_t)(b), "%s %s %s", #a, #op, #b)
#define ck_uint_(a, op, b)                                                                    \
	ck_assert_msg((uintmax_t)(a) op (uintmax_t)(b), "%s %s %s", #a, #op, #b)
#define ck_assert_int_eq(a, b) ck_int_(a, ==, b)
#define ck_assert_int_ge(a, b) ck_int_(a, >=, b)
#define ck_assert_uint_eq(a, b) ck_uint_(a, ==, b)
#define ck_assert_uint_lt(a, b) ck_uint_(a, <, b)
#define ck_assert_uint_le(a, b) ck_uint_(a, <=, b)
#define ck_assert_ptr_nonnull(p) ck_assert_msg((p) != NULL, "%s is NULL", #p)

#endif
