/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* daemon/config.c: metaroced.conf and command-line settings, strict with named errors. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "shm/spin.h"
#include "suites.h"

static char err[256];

static int parse(struct mrcd_config *cfg, const char *text)
{
	err[0] = '\0';
	return mrcd_config_parse(cfg, "t.conf", text, strlen(text), err, sizeof(err));
}

/* The documented example parses to exactly what it says. */
START_TEST(mrcd_config_parse__documented_example)
{
	static const char text[] =
		"# metaroced.conf\n"
		"backend = udp\n"
		"port = 4793   # not the default\n"
		"plane = 0 eth1 198.18.0.1\n"
		"plane = 1 eth2 2001:db8::1\r\n"
		"paths_per_plane = 2\n"
		"\n"
		"mtu = 9000\n"
		"rx_capacity = 100G\n"
		"peer_prefix = 198.18.0.0/15\n"
		"control_socket = /tmp/m.sock\n"
		"busy_poll = yes\n"
		"udp_gso = no\n"
		"transport = rocev2\n";
	static const uint8_t v4[16] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 198, 18, 0, 1 };
	struct mrcd_config cfg;

	mrcd_config_default(&cfg);
	ck_assert_int_eq(parse(&cfg, text), 0);
	ck_assert_int_eq(cfg.backend, MRCD_BACKEND_UDP);
	ck_assert_uint_eq(cfg.port, 4793);
	ck_assert_uint_eq(cfg.n_planes, 2);
	ck_assert_str_eq(cfg.planes[0].ifname, "eth1");
	ck_assert_uint_eq(cfg.planes[0].addr.family, MRC_AF_INET);
	ck_assert_mem_eq(cfg.planes[0].addr.addr, v4, 16);
	ck_assert_uint_eq(cfg.planes[1].addr.family, MRC_AF_INET6);
	ck_assert_uint_eq(cfg.planes[1].addr.addr[0], 0x20);
	ck_assert_uint_eq(cfg.paths_per_plane, 2);
	ck_assert_uint_eq(cfg.mtu, 9000);
	ck_assert_uint_eq(cfg.rx_capacity_bps, 100000000000ull);
	ck_assert_uint_eq(cfg.n_prefixes, 1);
	ck_assert_uint_eq(cfg.prefixes[0].len, 96 + 15);
	ck_assert_str_eq(cfg.control_socket, "/tmp/m.sock");
	ck_assert_uint_eq(cfg.busy_poll_ns, MRC_SPIN_ALWAYS);
	ck_assert(!cfg.udp_gso);
	ck_assert(cfg.rocev2);
	ck_assert_int_eq(mrcd_config_check(&cfg, err, sizeof(err)), 0);
}
END_TEST

/* Every bad line names the file, the line and the fault; nothing of the file is applied. */
/* What config show prints reads back to the same settings. */
START_TEST(mrcd_config_render__reads_back)
{
	static const char text[] = "backend = udp\nport = 4793\nplane = 0 eth1 198.18.0.1\n"
				   "plane = 3 eth2 2001:db8::1\npaths_per_plane = 2\nmtu = 9000\n"
				   "rx_capacity = 100G\npeer_prefix = 198.18.0.0/15\n"
				   "peer_prefix = 2001:db8::/32\ncontrol_socket = /tmp/m.sock\n"
				   "busy_poll = 50us\nudp_gso = no\nmetrics_listen = [::1]:9464\n"
				   "transport = rocev2\nuser_max_connections = 8\n"
				   "user_max_qps = 100\nuser_max_registered = 64G\n"
				   "user_max_page_maps = 3\nworkers = 3\ncpus = 4-5,1\n";
	struct mrcd_config a, b;
	char out1[2048], out2[2048];
	size_t n1, n2;

	mrcd_config_default(&a);
	ck_assert_int_eq(parse(&a, text), 0);
	n1 = mrcd_config_render(&a, out1, sizeof(out1));
	mrcd_config_default(&b);
	ck_assert_int_eq(mrcd_config_parse(&b, "shown", out1, n1, err, sizeof(err)), 0);
	n2 = mrcd_config_render(&b, out2, sizeof(out2));
	ck_assert_uint_eq(n1, n2);
	ck_assert_mem_eq(out1, out2, n1);
	ck_assert_uint_eq(b.rx_capacity_bps, 100000000000ull);
	ck_assert_uint_eq(b.prefixes[1].len, 32);
	ck_assert_uint_eq(b.metrics_port, 9464);
	ck_assert_uint_eq(b.busy_poll_ns, 50000);
	ck_assert_uint_eq(b.user.connections, 8);
	ck_assert_uint_eq(b.user.qps, 100);
	ck_assert_uint_eq(b.user.registered_bytes, 64ull << 30);
	ck_assert_uint_eq(b.user.page_map_bytes, 3);
	ck_assert_uint_eq(b.workers, 3);
	ck_assert_uint_eq(b.n_cpus, 3);
	ck_assert_uint_eq(b.cpus[0], 4);
	ck_assert_uint_eq(b.cpus[2], 1);
	ck_assert_uint_eq(mrcd_config_render(&a, out1, 10), 10); /* truncates, never overflows */
}
END_TEST

START_TEST(mrcd_config_parse__errors_name_file_line_and_fault)
{
	static const struct {
		const char *text, *want;
	} cases[] = {
		{ "port = 0\n", "t.conf:1: port must be a number from 1 to 65535, not '0'" },
		{ "port = 65536\n", "t.conf:1: port must be a number from 1 to 65535" },
		{ "port = 12x\n", "not '12x'" },
		{ "port = -1\n", "not '-1'" },
		{ "\n\nprot = 1\n", "t.conf:3: unknown key 'prot' (did you mean 'port'?)" },
		{ "colour = red\n", "t.conf:1: unknown key 'colour'" },
		{ "port 4792\n", "t.conf:1: expected 'key = value', got 'port 4792'" },
		{ "backend = dpdk\n", "backend must be auto, xdp or udp, not 'dpdk'" },
		{ "plane = 0 eth1\n", "plane must be 'INDEX INTERFACE ADDRESS'" },
		{ "plane = 0 eth1 198.18.0.1 extra\n", "plane must be 'INDEX INTERFACE ADDRESS'" },
		{ "plane = 16 eth1 198.18.0.1\n", "plane index must be from 0 to 15, not '16'" },
		{ "plane = 0 eth/1 198.18.0.1\n", "'eth/1' is not an interface name" },
		{ "plane = 0 eth1 198.18.0.256\n", "'198.18.0.256' is not an IPv4 or IPv6 address" },
		{ "plane = 0 eth1 ::ffff:198.18.0.1\n", "is not an IPv4 or IPv6 address" },
		{ "plane = 0 a 198.18.0.1\nplane = 0 b 198.18.0.2\n",
		  "t.conf:2: plane 0 is given twice" },
		{ "plane = 0 a 198.18.0.1\nplane = 1 b 198.18.0.1\n",
		  "address 198.18.0.1 is given to two planes" },
		{ "paths_per_plane = 9\n", "paths_per_plane must be from 1 to 8" },
		{ "mtu = 575\n", "mtu must be from 576 to 65535" },
		{ "rx_capacity = 10Q\n", "rx_capacity must be a bit rate" },
		{ "rx_capacity = 99999999999T\n", "rx_capacity must be a bit rate" },
		{ "peer_prefix = 198.18.0.0\n", "peer_prefix must be ADDRESS/LENGTH" },
		{ "peer_prefix = 198.18.0.0/33\n", "prefix length '33' is out of range for IPv4" },
		{ "peer_prefix = fd00::/129\n", "prefix length '129' is out of range for IPv6" },
		{ "control_socket = run/x.sock\n", "control_socket must be an absolute path" },
		{ "busy_poll = maybe\n",
		  "busy_poll must be no, yes or a duration such as 50us, not 'maybe'" },
		{ "busy_poll = 50\n", "not '50'" },
		{ "busy_poll = 50 us\n", "not '50 us'" },
		{ "busy_poll = us\n", "not 'us'" },
		{ "busy_poll = 2h\n", "not '2h'" },
		{ "busy_poll = 3601s\n", "not '3601s'" },
		{ "busy_poll = 99999999999999999999ns\n", "busy_poll must be" },
		{ "udp_gso = often\n", "udp_gso must be yes or no, not 'often'" },
		{ "transport = iwarp\n", "transport must be metaroce or rocev2, not 'iwarp'" },
		{ "user_max_qps = 0\n", "user_max_qps must be a number from 1 to 2048, not '0'" },
		{ "user_max_connections = 257\n", "user_max_connections must be a number from 1" },
		{ "user_max_mrs = 8193\n", "user_max_mrs must be a number from 1 to 8192" },
		{ "user_max_registered = 0\n",
		  "user_max_registered must be auto or a size such as 64G, not '0'" },
		{ "user_max_page_maps = 1P\n", "user_max_page_maps must be auto or a size" },
		{ "user_max_registered = 99999999999T\n", "user_max_registered must be" },
		{ "user_max_registered = 1 G\n", "not '1 G'" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct mrcd_config cfg, before;

		mrcd_config_default(&cfg);
		before = cfg;
		ck_assert_msg(parse(&cfg, cases[i].text) == -1, "accepted: %s", cases[i].text);
		ck_assert_msg(strstr(err, cases[i].want) != NULL, "for %s got: %s", cases[i].text,
			      err);
		ck_assert_msg(!memcmp(&cfg, &before, sizeof(cfg)), "partly applied: %s",
			      cases[i].text);
	}
}
END_TEST

START_TEST(mrcd_config_parse__limits)
{
	struct mrcd_config cfg;
	char big[1100];

	mrcd_config_default(&cfg);
	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	ck_assert_int_eq(parse(&cfg, big), -1);
	ck_assert_ptr_nonnull(strstr(err, "line longer than 1024 bytes"));
	ck_assert_int_eq(mrcd_config_parse(&cfg, "t.conf", "port = 1\0x", 10, err, sizeof(err)),
			 -1);
	ck_assert_ptr_nonnull(strstr(err, "NUL byte"));
	ck_assert_int_eq(parse(&cfg, ""), 0);
	ck_assert_int_eq(parse(&cfg, "   # only a comment"), 0);
}
END_TEST

/* busy_poll: off, always, or a spin budget in any unit, which config show prints back. */
/* workers and cpus: what parses, what is refused and why, and what auto comes to. */
START_TEST(mrcd_config_parse__workers_and_cpus)
{
	static const char *const bad[][2] = {
		{ "workers = 0\n", "workers must be auto or 1 to 64" },
		{ "workers = 65\n", "workers must be auto or 1 to 64" },
		{ "workers = two\n", "workers must be auto or 1 to 64" },
		{ "workers = -1\n", "workers must be auto or 1 to 64" },
		{ "cpus = \n", "cpus must" },
		{ "cpus = 3-1\n", "cpus must be a list" },
		{ "cpus = 1,,2\n", "cpus must be a list" },
		{ "cpus = 1;2\n", "cpus must be a list" },
		{ "cpus = 0-64\n", "cpus names more than 64 CPUs" },
		{ "cpus = 2,1-3\n", "cpus names CPU 2 twice" },
		{ "cpus = 4096\n", "cpus must be a list" },
	};
	const unsigned queues[4] = { 1, 1, 4, 0 };
	struct mrcd_config cfg;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		mrcd_config_default(&cfg);
		ck_assert_int_eq(parse(&cfg, bad[i][0]), -1);
		ck_assert_msg(strstr(err, bad[i][1]), "%s: %s", bad[i][0], err);
		ck_assert_uint_eq(cfg.workers, 0); /* nothing applied */
		ck_assert_uint_eq(cfg.n_cpus, 0);
	}
	mrcd_config_default(&cfg);
	ck_assert_int_eq(parse(&cfg, "workers = auto\ncpus = 7\n"), 0);
	ck_assert_uint_eq(cfg.workers, 0);
	ck_assert_uint_eq(cfg.n_cpus, 1);
	/* auto: a worker per receive queue of the planes, no more than the CPUs it may use */
	mrcd_config_default(&cfg);
	ck_assert_uint_eq(mrcd_workers_auto(&cfg, queues, 8), 1); /* no plane: one */
	ck_assert_int_eq(parse(&cfg, "plane = 0 a 198.18.0.1\nplane = 1 b 198.19.0.1\n"), 0);
	ck_assert_uint_eq(mrcd_workers_auto(&cfg, queues, 8), 2);
	ck_assert_uint_eq(mrcd_workers_auto(&cfg, queues, 1), 1);
	ck_assert_int_eq(parse(&cfg, "plane = 2 c 198.20.0.1\nplane = 3 d 198.21.0.1\n"), 0);
	ck_assert_uint_eq(mrcd_workers_auto(&cfg, queues, 16), 7); /* 1 + 1 + 4 + (unknown) 1 */
	ck_assert_uint_eq(mrcd_workers_auto(&cfg, queues, 2), 2);
	ck_assert_int_eq(parse(&cfg, "cpus = 0-2\n"), 0); /* the list bounds it, not affinity */
	ck_assert_uint_eq(mrcd_workers_auto(&cfg, queues, 16), 3);
}
END_TEST

START_TEST(mrcd_config_parse__busy_poll_budgets)
{
	static const struct {
		const char *text;
		uint64_t ns;
		const char *shown;
	} cases[] = {
		{ "busy_poll = no\n", 0, "busy_poll = no\n" },
		{ "busy_poll = off\n", 0, "busy_poll = no\n" },
		{ "busy_poll = 0us\n", 0, "busy_poll = no\n" },
		{ "busy_poll = yes\n", MRC_SPIN_ALWAYS, "busy_poll = yes\n" },
		{ "busy_poll = 750ns\n", 750, "busy_poll = 750ns\n" },
		{ "busy_poll = 50us\n", 50000, "busy_poll = 50us\n" },
		{ "busy_poll = 2ms\n", 2000000, "busy_poll = 2000us\n" },
		{ "busy_poll = 1s\n", 1000000000, "busy_poll = 1000000us\n" },
	};
	char out[2048];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct mrcd_config cfg;

		mrcd_config_default(&cfg);
		ck_assert_int_eq(parse(&cfg, cases[i].text), 0);
		ck_assert_uint_eq(cfg.busy_poll_ns, cases[i].ns);
		out[mrcd_config_render(&cfg, out, sizeof(out) - 1)] = '\0';
		ck_assert_msg(strstr(out, cases[i].shown), "%s shown as: %s", cases[i].text, out);
	}
}
END_TEST

/* The RTO settings: durations with units, shown back, refused when out of order or unitless;
 * the defaults are SPEC 16's. */
START_TEST(mrcd_config_parse__rto_settings)
{
	struct mrcd_config cfg;
	char out[2048];

	mrcd_config_default(&cfg);
	ck_assert_uint_eq(cfg.rto_initial_ns, 1000000);
	ck_assert_uint_eq(cfg.rto_min_ns, 200000);
	ck_assert_uint_eq(cfg.rto_max_ns, 100000000);
	ck_assert_int_eq(parse(&cfg, "plane = 0 a 198.18.0.1\nrto_initial = 50ms\n"
				     "rto_min = 20ms\nrto_max = 1s\n"), 0);
	ck_assert_uint_eq(cfg.rto_initial_ns, 50000000);
	ck_assert_uint_eq(cfg.rto_min_ns, 20000000);
	ck_assert_uint_eq(cfg.rto_max_ns, 1000000000);
	ck_assert_int_eq(mrcd_config_check(&cfg, err, sizeof(err)), 0);
	out[mrcd_config_render(&cfg, out, sizeof(out) - 1)] = '\0';
	ck_assert_ptr_nonnull(strstr(out, "rto_initial = 50000000ns\n"));
	ck_assert_ptr_nonnull(strstr(out, "rto_min = 20000000ns\n"));
	ck_assert_int_eq(parse(&cfg, "rto_min = 60ms\n"), 0);
	ck_assert_int_eq(mrcd_config_check(&cfg, err, sizeof(err)), -1);
	ck_assert_ptr_nonnull(strstr(err, "rto_min (60000us) <= rto_initial (50000us)"));
	mrcd_config_default(&cfg);
	ck_assert_int_eq(parse(&cfg, "rto_min = 5\n"), -1);
	ck_assert_ptr_nonnull(strstr(err, "rto_min must be a duration such as 200us or 1ms, not '5'"));
	ck_assert_int_eq(parse(&cfg, "rto_max = yes\n"), -1);
	ck_assert_int_eq(parse(&cfg, "rto_initial = 0ms\n"), -1);
}
END_TEST

/* A configuration without planes, or with too many paths, is refused as a whole. */
START_TEST(mrcd_config_check__whole_configuration)
{
	struct mrcd_config cfg;

	mrcd_config_default(&cfg);
	ck_assert_int_eq(mrcd_config_check(&cfg, err, sizeof(err)), -1);
	ck_assert_ptr_nonnull(strstr(err, "no plane is configured"));
	ck_assert_int_eq(parse(&cfg, "plane = 0 a 198.18.0.1\nplane = 1 b 198.19.0.1\n"
				     "plane = 2 c 198.20.0.1\nplane = 3 d 198.21.0.1\n"
				     "plane = 4 e 198.22.0.1\npaths_per_plane = 7\n"),
			 0);
	ck_assert_int_eq(mrcd_config_check(&cfg, err, sizeof(err)), -1);
	ck_assert_ptr_nonnull(strstr(err, "exceeds 32 paths per QP"));
}
END_TEST

/* Who may discover us: the prefixes, or by default only our planes' own subnets. */
START_TEST(mrcd_config_admits__prefixes_and_default)
{
	struct mrcd_config cfg;
	uint8_t a[16] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 198, 18, 0, 7 };

	mrcd_config_default(&cfg);
	ck_assert_int_eq(parse(&cfg, "plane = 0 eth1 198.18.0.1\n"), 0);
	ck_assert(mrcd_config_admits(&cfg, a));
	a[14] = 1; /* 198.18.1.7: another /24 */
	ck_assert(!mrcd_config_admits(&cfg, a));
	ck_assert_int_eq(parse(&cfg, "peer_prefix = 198.18.0.0/15\n"), 0);
	ck_assert(mrcd_config_admits(&cfg, a));
	a[13] = 19; /* 198.19.1.7 */
	ck_assert(mrcd_config_admits(&cfg, a));
	a[13] = 20; /* 198.20.1.7 */
	ck_assert(!mrcd_config_admits(&cfg, a));
}
END_TEST

/* Files: a missing one says so; a real one loads; flags apply on top. */
START_TEST(mrcd_config_load__file_and_overrides)
{
	struct mrcd_config cfg;
	char path[] = "/tmp/metaroce-config-XXXXXX";
	int fd = mkstemp(path);
	static const char text[] = "plane = 0 eth1 198.18.0.1\nport = 5000\n";

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, text, sizeof(text) - 1), (ssize_t)sizeof(text) - 1);
	close(fd);
	mrcd_config_default(&cfg);
	ck_assert_int_eq(mrcd_config_load(&cfg, "/nonexistent/metaroced.conf", err, sizeof(err)),
			 -1);
	ck_assert_str_eq(err, "/nonexistent/metaroced.conf: No such file or directory");
	ck_assert_int_eq(mrcd_config_load(&cfg, path, err, sizeof(err)), 0);
	ck_assert_uint_eq(cfg.port, 5000);
	ck_assert_int_eq(mrcd_config_set(&cfg, "port", "6000", err, sizeof(err)), 0);
	ck_assert_uint_eq(cfg.port, 6000);
	ck_assert_int_eq(mrcd_config_set(&cfg, "plane", "1 eth2 198.19.0.1", err, sizeof(err)), 0);
	ck_assert_uint_eq(cfg.n_planes, 2);
	unlink(path);
}
END_TEST

Suite *config_suite(void)
{
	Suite *s = suite_create("config");
	TCase *tc = tcase_create("config");

	tcase_add_test(tc, mrcd_config_parse__documented_example);
	tcase_add_test(tc, mrcd_config_render__reads_back);
	tcase_add_test(tc, mrcd_config_parse__busy_poll_budgets);
	tcase_add_test(tc, mrcd_config_parse__rto_settings);
	tcase_add_test(tc, mrcd_config_parse__errors_name_file_line_and_fault);
	tcase_add_test(tc, mrcd_config_parse__limits);
	tcase_add_test(tc, mrcd_config_check__whole_configuration);
	tcase_add_test(tc, mrcd_config_admits__prefixes_and_default);
	tcase_add_test(tc, mrcd_config_parse__workers_and_cpus);
	tcase_add_test(tc, mrcd_config_load__file_and_overrides);
	suite_add_tcase(s, tc);
	return s;
}
