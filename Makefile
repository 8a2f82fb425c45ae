# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# metaroce build. Everything lands under build/; nothing is written into the source tree.
#
#   make            build every C and BPF object, the unit-test runner and the fuzz harnesses
#   make deps       install the Debian packages the build and tests need (no-op when present)
#   make demo       deps + build + two hosts in network namespaces running RDMA over metaroced
#   make check      deps + build + unit tests + unit tests under ASan/UBSan + the verbs ABI
#                   check + integration tests in network namespaces + bounded fuzzing
#   make install    install into $(DESTDIR)$(PREFIX) (default /usr/local), the unit and the
#                   configuration under $(DESTDIR)/etc and $(DESTDIR)$(UNITDIR)
#   make clean      remove build/
#
#   V=1             show the commands
#   FUZZ_SECONDS=N  time per fuzz harness in `make check` (default 30)
#   CK_RUN_SUITE=codec make unit   run one libcheck suite

VERSION := 0.1.0
BUILD := build
OBJ := $(BUILD)/obj
SAN := $(BUILD)/asan
TSAN := $(BUILD)/tsan
FUZZ := $(BUILD)/fuzz

CC ?= cc
CLANG ?= clang
CXX ?= c++
FUZZ_SECONDS ?= 30

ifeq ($(V),1)
Q :=
msg = @true
else
Q := @
msg = @printf '  %-8s %s\n' "$(1)" "$(2)"
endif

WARNINGS := -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
	    -Wpointer-arith -Wvla -Wformat=2
# CFLAGS is the user's (make CFLAGS=-O0); what the project requires is in MRC_CFLAGS and is
# always added, so warnings stay errors whatever is passed on the command line.
CPPFLAGS += -I. -Ilib/include -Ilib -Idaemon -Itests -I$(BUILD)/bpf -D_GNU_SOURCE -DMETAROCE_VERSION='"$(VERSION)"'
CFLAGS ?= -O2 -g
CXXFLAGS ?= -O2 -g
MRC_CFLAGS := -std=gnu11 $(WARNINGS) -fno-strict-aliasing
# C++ only for the collectives benchmark, which links Gloo
CXX_WARNINGS := -Wall -Wextra -Werror -Wshadow -Wpointer-arith -Wvla -Wformat=2
DEPFLAGS = -MMD -MP
SAN_FLAGS := -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined \
	     -fno-sanitize-recover=all
TSAN_FLAGS := -O1 -g -fno-omit-frame-pointer -fsanitize=thread
# BPF C sees the kernel's UAPI headers; asm/ lives in the multiarch include directory on Debian.
BPF_CFLAGS := -target bpf -O2 -g -std=gnu11 $(WARNINGS) -Ilib/include \
	      -idirafter /usr/include/$(shell $(CC) -dumpmachine 2>/dev/null)

CHECK_CFLAGS = $(shell pkg-config --cflags check 2>/dev/null)
CHECK_LIBS = $(shell pkg-config --libs check 2>/dev/null)
SYSTEMD_LIBS = $(shell pkg-config --libs libsystemd 2>/dev/null)
MHD_LIBS = $(shell pkg-config --libs libmicrohttpd 2>/dev/null)
# the engine's peer authentication and key derivation (lib/proto/auth.c)
SODIUM_LIBS = $(shell pkg-config --libs libsodium 2>/dev/null)
PROTO_LIBS = $(SODIUM_LIBS)
DAEMON_LIBS = $(SYSTEMD_LIBS) $(MHD_LIBS) -lmnl -lxdp -lbpf
BPFTOOL ?= bpftool

# --- sources ---------------------------------------------------------------------------

PROTO_SRCS := $(sort $(wildcard lib/proto/*.c lib/shm/*.c))
DAEMON_SRCS := $(filter-out daemon/main.c,$(sort $(wildcard daemon/*.c daemon/*/*.c)))
UNIT_SRCS := $(wildcard tests/unit/*.c) $(wildcard tests/harness/*.c)
FUZZ_HARNESSES := codec conn config ctl cli peer frame admission requests cm
HEADER_CHECKS_BPF := tests/headers/wire_bpf.c

PROTO_OBJS := $(PROTO_SRCS:%.c=$(OBJ)/%.o)
UNIT_OBJS := $(UNIT_SRCS:%.c=$(OBJ)/%.o)
SAN_PROTO_OBJS := $(PROTO_SRCS:%.c=$(SAN)/obj/%.o)
DAEMON_OBJS := $(DAEMON_SRCS:%.c=$(OBJ)/%.o)
SAN_DAEMON_OBJS := $(DAEMON_SRCS:%.c=$(SAN)/obj/%.o)
SAN_UNIT_OBJS := $(UNIT_SRCS:%.c=$(SAN)/obj/%.o)

LIBPROTO := $(BUILD)/lib/libmetaroce-proto.a
SAN_LIBPROTO := $(SAN)/lib/libmetaroce-proto.a
LIBDAEMON := $(BUILD)/lib/libmetaroced.a
SAN_LIBDAEMON := $(SAN)/lib/libmetaroced.a
UNIT_RUNNER := $(BUILD)/tests/unit/runner
SAN_UNIT_RUNNER := $(SAN)/tests/unit/runner
FUZZ_BINS := $(FUZZ_HARNESSES:%=$(FUZZ)/fuzz_%)
CORPUS_GEN := $(BUILD)/tests/fuzz/gen_corpus
HEADER_CHECK_OBJS := $(HEADER_CHECKS_BPF:%.c=$(OBJ)/%.bpf.o)
ENGINE_REPORT := $(BUILD)/bench/engine-report
METAROCED := $(BUILD)/sbin/metaroced
SAN_METAROCED := $(SAN)/sbin/metaroced
# the daemon under ThreadSanitizer: its worker threads (make integration-tsan)
TSAN_METAROCED := $(TSAN)/sbin/metaroced
TSAN_DAEMON_OBJS := $(DAEMON_SRCS:%.c=$(TSAN)/obj/%.o) $(PROTO_SRCS:%.c=$(TSAN)/obj/%.o) \
		    $(TSAN)/obj/daemon/main.o
METAROCE_CTL := $(BUILD)/bin/metaroce-ctl
METAROCE_PERF := $(BUILD)/bin/metaroce-perf
# BPF programs loaded into the kernel, and their BPF_PROG_TEST_RUN fixture tests
BPF_OBJS := $(BUILD)/bpf/impair.bpf.o $(BUILD)/bpf/metaroce_xdp.bpf.o \
	    $(BUILD)/bpf/metaroce_workers.bpf.o \
	    $(BUILD)/tests/bpf/xdp_neighbour.bpf.o
BPF_TESTS := $(BUILD)/tests/bpf/test_impair $(BUILD)/tests/bpf/test_xdp \
	     $(BUILD)/tests/bpf/test_workers
XDP_COST := $(BUILD)/bench/xdp-cost
# One rank of a Gloo collective job (bench/collectives): the benchmark and test_collectives
GLOO_BENCH := $(BUILD)/bench/gloo-bench
# the fabric simulator: the engine inside ns-3 (Debian's libns3-dev, 3.37); only --libs from
# its pkg-config files, whose --cflags are broken in Debian (the headers are in /usr/include)
SIM_CHECK := $(BUILD)/sim/metaroce-sim-check
SIM_REPORT := $(BUILD)/sim/metaroce-sim-report
SIM_OBJS := $(patsubst sim/%.cc,$(OBJ)/sim/%.o,$(filter-out sim/check.cc sim/report.cc,\
		$(wildcard sim/*.cc)))
NS3_LIBS = $(shell pkg-config --libs ns3-core ns3-network ns3-internet ns3-point-to-point \
		 2>/dev/null)
# Connected RC QPs that carry nothing, beside a stream (bench/core: make bench-core)
IDLE_QPS := $(BUILD)/bench/idle-qps

# libmetaroce.so.1: the libibverbs ABI (lib/verbs) and librdmacm's (lib/rdmacm), plus the ring
# and page-sharing code it shares with the daemon, built position independent.
VERBS_SRCS := $(sort $(wildcard lib/verbs/*.c lib/rdmacm/*.c)) lib/shm/ring.c lib/shm/share.c lib/shm/fdpass.c \
	      lib/shm/spin.c
VERBS_OBJS := $(VERBS_SRCS:%.c=$(OBJ)/pic/%.o)
LIBMETAROCE := $(BUILD)/lib/libmetaroce.so.1
METAROCE_RUN := $(BUILD)/bin/metaroce-run
VERBS_TESTS := $(BUILD)/tests/verbs/verbs_check $(BUILD)/tests/verbs/test_unsupported \
	       $(BUILD)/tests/verbs/hostile_client $(BUILD)/tests/verbs/verbs_api_check \
	       $(BUILD)/tests/verbs/atomic_check $(BUILD)/tests/integration/attack/udp_flood \
	       $(BUILD)/tests/integration/attack/forge $(BUILD)/tests/integration/attack/hoard \
	       $(BUILD)/tests/verbs/fatal_check $(BUILD)/tests/verbs/cm_check \
	       $(BUILD)/tests/ucx/ucp_check

# --- top-level targets -----------------------------------------------------------------

.PHONY: all programs deps check demo install deb layering unit unit-asan verbs-abi bpf-test fuzz \
	sim-check integration integration-asan integration-tsan test-systemd image test-containers \
	compliance engine-report sim-report bench bench-quick bench-xdp bench-backend \
	bench-udp-vs-tcp bench-workers bench-collectives bench-core bench-auth bench-latency clean
.DEFAULT_GOAL := all

all: $(LIBPROTO) $(UNIT_RUNNER) $(SAN_UNIT_RUNNER) $(FUZZ_BINS) $(CORPUS_GEN) $(HEADER_CHECK_OBJS) \
     $(ENGINE_REPORT) $(METAROCED) $(METAROCE_CTL) $(METAROCE_PERF) $(LIBMETAROCE) \
     $(METAROCE_RUN) $(VERBS_TESTS) $(SAN_METAROCED) $(BPF_OBJS) $(BPF_TESTS) $(XDP_COST) \
     $(GLOO_BENCH) $(IDLE_QPS) $(SIM_CHECK) $(SIM_REPORT)
	@:

# What an installation needs and no more (the Debian package build uses it).
programs: $(METAROCED) $(METAROCE_CTL) $(METAROCE_PERF) $(LIBMETAROCE) $(METAROCE_RUN)
	@:

# Debian packages, one per line in the order a reader would look for them.
DEB_PACKAGES := \
	gcc g++ libc6-dev make pkg-config \
	clang libclang-rt-14-dev \
	linux-libc-dev \
	check libsystemd-dev libmicrohttpd-dev libmnl-dev libbpf-dev libxdp-dev bpftool xdp-tools \
	libsodium-dev \
	libibverbs-dev ibverbs-utils perftest libgloo-dev ucx-utils libucx-dev \
	librdmacm-dev rdmacm-utils \
	iproute2 python3 iperf3 sockperf gnuplot-nox time groff-base curl \
	dpkg-dev debhelper python3-yaml linux-perf \
	systemd-container mmdebstrap podman buildah runc catatonit nodejs \
	libns3-dev libgsl-dev

deps:
	$(Q)missing=$$(for p in $(DEB_PACKAGES); do \
		dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q '^install ok installed' \
			|| printf ' %s' $$p; done); \
	if [ -n "$$missing" ]; then \
		sudo=; [ "$$(id -u)" -eq 0 ] || sudo=sudo; \
		printf '  %-8s %s\n' DEPS "installing$$missing"; \
		$$sudo apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive $$sudo apt-get install -y -qq --no-install-recommends \
			$$missing >/dev/null; \
	fi
	$(Q)# Debian's nodejs comes without npm, NodeSource's with it
	$(Q)command -v npm >/dev/null || { sudo=; [ "$$(id -u)" -eq 0 ] || sudo=sudo; \
		DEBIAN_FRONTEND=noninteractive $$sudo apt-get install -y -qq --no-install-recommends \
			npm >/dev/null; }

# The deps step runs first and on its own, so the rest of the build sees the new packages.
check:
	$(Q)$(MAKE) --no-print-directory deps
	$(Q)$(MAKE) --no-print-directory all
	$(Q)$(MAKE) --no-print-directory layering unit unit-asan verbs-abi bpf-test compliance \
		sim-check integration integration-asan integration-tsan test-systemd test-containers fuzz

# The main job: two hosts, two planes, a daemon each, unmodified RDMA programs between them.
demo:
	$(Q)$(MAKE) --no-print-directory deps
	$(Q)$(MAKE) --no-print-directory $(METAROCED) $(METAROCE_CTL) $(LIBMETAROCE) $(METAROCE_RUN) \
		$(VERBS_TESTS)
	$(Q)sh demo/demo.sh $(BUILD)

# What may call what (docs/ARCHITECTURE.md): no I/O in the engine or the core, includes one way.
layering:
	$(call msg,TEST,layering)
	$(Q)out=$$(sh tests/layering.sh) || { echo "$$out"; exit 1; }; echo "           $$out"

unit: $(UNIT_RUNNER)
	$(call msg,TEST,unit)
	$(Q)$(UNIT_RUNNER)

unit-asan: $(SAN_UNIT_RUNNER)
	$(call msg,TEST,unit under ASan+UBSan)
	$(Q)ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
		$(SAN_UNIT_RUNNER)

# libmetaroce's export table against the installed libibverbs, and every unsupported call.
verbs-abi: $(LIBMETAROCE) $(BUILD)/tests/verbs/test_unsupported
	$(call msg,TEST,verbs ABI)
	$(Q)out=$$(bash tests/verbs/check_symbols.sh $(LIBMETAROCE)) || { echo "$$out"; exit 1; }; \
		echo "           $$out"
	$(Q)out=$$(LD_LIBRARY_PATH=$(BUILD)/lib $(BUILD)/tests/verbs/test_unsupported) || \
		{ echo "$$out"; exit 1; }; echo "$$out" | tail -n 1 | sed 's/^/           /'

# The engine inside ns-3 (sim/): small leaf-spine fabrics at 0%, 1% and 10% loss and with a
# plane gone dark mid-run, a fat-tree, and the RoCEv2 baselines with PFC and without: every
# byte checked, no hang, every spine or core used, the incast marked, PFC lossless; and the
# report (make sim-report) run small: every run of it finished, every byte right.
sim-check: $(SIM_CHECK) $(SIM_REPORT)
	$(call msg,TEST,ns-3 fabric)
	$(Q)for run in "--loss 0" "--loss 0.01" "--hosts 16 --planes 4 --loss 0.1" \
		"--loss 0.01 --fail-plane 1" "--hosts 16 --fat-tree 4 --loss 0.01" \
		"--rocev2 --pfc --loss 0 --buffer 8" "--rocev2 --loss 0 --buffer 8" \
		"--rocev2 --pfc --hosts 16 --loss 0.01"; do \
		out=$$($(SIM_CHECK) $$run 2>&1) || { echo "$$out"; exit 1; }; \
		echo "$$out" | tail -n 1 | sed 's/^/           /'; done
	$(Q)mkdir -p $(BUILD)/sim-quick
	$(Q)out=$$($(SIM_REPORT) $(BUILD)/sim-quick.json $(BUILD)/sim-quick --quick 2>&1) && \
		python3 sim/render_report.py --check $(BUILD)/sim-quick.json || \
		{ echo "$$out"; exit 1; }; \
		echo "           metaroce-sim-report --quick: every run finished, every byte right"

# BPF programs in this kernel through BPF_PROG_TEST_RUN: declarative fixtures, measured rates.
bpf-test: $(BPF_OBJS) $(BPF_TESTS)
	$(call msg,TEST,BPF programs)
	$(Q)out=$$($(BUILD)/tests/bpf/test_impair $(BUILD)/bpf/impair.bpf.o) || \
		{ echo "$$out"; exit 1; }; echo "$$out" | tail -n 1 | sed 's/^/           /'
	$(Q)out=$$($(BUILD)/tests/bpf/test_xdp $(BUILD)/bpf/metaroce_xdp.bpf.o); rc=$$?; \
		[ $$rc -eq 0 ] || [ $$rc -eq 77 ] || { echo "$$out"; exit 1; }; \
		echo "$$out" | tail -n 1 | sed 's/^/           /'
	$(Q)out=$$($(BUILD)/tests/bpf/test_workers $(BUILD)/bpf/metaroce_workers.bpf.o) || \
		{ echo "$$out"; exit 1; }; echo "$$out" | tail -n 1 | sed 's/^/           /'

# The verbs tests and the testbed's with metaroced built under ThreadSanitizer, two workers
# each: a data race between workers, or between a worker and the control thread, is a report,
# and any report fails the run (each daemon writes its reports beside the build, read after).
integration-tsan: $(TSAN_METAROCED) $(METAROCE_CTL) $(LIBMETAROCE) $(METAROCE_RUN) $(VERBS_TESTS) \
		$(METAROCE_PERF)
	$(call msg,TEST,integration with metaroced under ThreadSanitizer)
	$(Q)rm -rf $(TSAN)/reports && mkdir -p $(TSAN)/reports
	$(Q)METAROCED=$(TSAN_METAROCED) METAROCE_TEST_WORKERS=2 \
		TSAN_OPTIONS=log_path=$(abspath $(TSAN))/reports/race:halt_on_error=1:second_deadlock_stack=1 \
		sh tests/integration/run.sh $(BUILD) tests/integration/test_verbs.sh \
		tests/integration/test_testbed.sh tests/integration/test_workers.sh
	$(Q)if ls $(TSAN)/reports/race.* >/dev/null 2>&1; then cat $(TSAN)/reports/race.*; \
		echo "ThreadSanitizer reported the races above"; exit 1; fi

# The verbs tests and the xdp backend's again with metaroced built under ASan+UBSan: the
# hostile client, killed clients, every opcode against the daemon's checks, the fast path's
# events, AF_XDP frames and netlink; any report fails the daemon's exit.
integration-asan: $(SAN_METAROCED) $(METAROCE_CTL) $(LIBMETAROCE) $(METAROCE_RUN) $(VERBS_TESTS) \
		$(METAROCE_PERF)
	$(call msg,TEST,integration with metaroced under ASan+UBSan)
	$(Q)METAROCED=$(SAN_METAROCED) METAROCE_TEST_WORKERS=1 \
		ASAN_OPTIONS=abort_on_error=1:detect_leaks=1 \
		UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 sh tests/integration/run.sh $(BUILD) \
		tests/integration/test_verbs.sh tests/integration/test_verbs_failures.sh \
		tests/integration/test_xdp.sh

# Real processes in network namespaces (tests/integration/lib.sh draws the topology).
integration: $(METAROCED) $(METAROCE_CTL) $(METAROCE_PERF) $(LIBMETAROCE) $(METAROCE_RUN) \
	     $(VERBS_TESTS) $(BPF_OBJS) $(GLOO_BENCH)
	$(call msg,TEST,integration)
	$(Q)sh tests/integration/run.sh $(BUILD)

# The Debian packages on a booted Debian under systemd-nspawn: the unit as an operator runs it.
# The first run makes a minbase rootfs in $(BUILD)/system (about 40 s from the mirror).
test-systemd: deb
	$(call msg,TEST,systemd)
	$(Q)DEBS=$(BUILD)/deb sh tests/integration/run.sh $(BUILD) tests/system/test_systemd.sh

# The compliance suite (tests/compliance/README.md): every wire script against the engine in
# virtual time (directly and through the agent protocol), against metaroced over real UDP
# with the udp and the xdp backend, every mutant of mutants.txt caught by some script, and the
# report of all with the specification's requirements ($(BUILD)/compliance/report.md,
# report.json, junit.xml).
COMPLIANCE := $(BUILD)/tests/compliance/compliance
COMPLIANCE_OBJS := $(patsubst %.c,$(OBJ)/%.o,$(filter-out tests/compliance/matrix.c,\
		   $(wildcard tests/compliance/*.c)))
COMPLIANCE_MATRIX := $(BUILD)/tests/compliance/compliance-matrix
COMPLIANCE_SCRIPTS = $(sort $(wildcard tests/compliance/scripts/*.pkt))
# the scripts an authenticating daemon runs (daemon.sh --auth): those that say auth=1
COMPLIANCE_AUTH_SCRIPTS = $(shell grep -l '^setup.* auth=1' $(COMPLIANCE_SCRIPTS))
AGENT_ENGINE := $(BUILD)/tests/compliance/compliance-agent-engine
AGENT_DAEMON := $(BUILD)/tests/compliance/compliance-agent-daemon
AGENT_TEMPLATE := $(BUILD)/tests/compliance/compliance-agent-template
$(COMPLIANCE): $(COMPLIANCE_OBJS) $(LIBPROTO)
	$(call msg,LD,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) -o $@ $^ $(PROTO_LIBS)

# the scenario matrix: two implementations through a network the suite spoils
$(COMPLIANCE_MATRIX): \
		$(filter-out %/compliance.o $(OBJ)/tests/compliance/script%,$(COMPLIANCE_OBJS)) \
		$(OBJ)/tests/compliance/matrix.o $(LIBPROTO)
	$(call msg,LD,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) -o $@ $^ $(PROTO_LIBS)

# agents (tests/compliance/agent.h): the engine, as the suite's check of its own protocol, and
# metaroced through libmetaroce
$(AGENT_ENGINE): $(OBJ)/tests/compliance/agents/engine.o $(OBJ)/tests/compliance/agent.o \
		$(OBJ)/tests/compliance/iut_engine.o $(LIBPROTO)
	$(call msg,LD,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) -o $@ $^ $(PROTO_LIBS)

# the template a newcomer starts from, built as its comment says (agent.c and nothing else)
$(AGENT_TEMPLATE): tests/compliance/agents/template.c tests/compliance/agent.c \
		tests/compliance/agent.h tests/compliance/iut.h
	$(call msg,LD,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) -I tests $(MRC_CFLAGS) $(CFLAGS) -o $@ $(filter %.c,$^)

$(AGENT_DAEMON): $(OBJ)/tests/compliance/agents/daemon.o \
		$(OBJ)/tests/compliance/agents/ip_headers.o $(OBJ)/tests/compliance/agents/more_verbs.o \
		$(OBJ)/tests/compliance/agents/peer_auth.o $(OBJ)/tests/compliance/agents/peer_sockets.o \
		$(OBJ)/tests/compliance/agent.o \
		$(OBJ)/tests/verbs/ctl_client.o $(LIBPROTO) $(LIBMETAROCE)
	$(call msg,LD,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) -o $@ $(filter %.o %.a,$^) $(PROTO_LIBS) -L$(BUILD)/lib \
		-l:libmetaroce.so.1

compliance: $(COMPLIANCE) $(COMPLIANCE_MATRIX) $(AGENT_ENGINE) $(AGENT_DAEMON) $(AGENT_TEMPLATE) \
		$(METAROCED) $(METAROCE_CTL)
	$(call msg,TEST,compliance)
	$(Q)mkdir -p $(BUILD)/compliance
	$(Q)rm -f $(BUILD)/compliance/metaroced-*.json $(BUILD)/compliance/matrix-*.json; \
	rc=0; $(COMPLIANCE) engine $(BUILD)/compliance/engine.json $(COMPLIANCE_SCRIPTS) || rc=1; \
	$(COMPLIANCE) remote:$(AGENT_ENGINE) $(BUILD)/compliance/engine-agent.json \
		$(COMPLIANCE_SCRIPTS) || rc=1; \
	$(COMPLIANCE) remote:$(AGENT_TEMPLATE) $(BUILD)/compliance/template.json \
		$(COMPLIANCE_SCRIPTS) >$(BUILD)/compliance/template.log || rc=1; \
	tail -n 1 $(BUILD)/compliance/template.log; \
	runs="$(BUILD)/compliance/engine.json $(BUILD)/compliance/engine-agent.json"; matrices=; \
	for b in udp xdp udp-auth xdp-auth; do \
		r=$${b%-auth}; n=metaroced-$$b; \
		case $$b in *-auth) opt=--auth sc="$(COMPLIANCE_AUTH_SCRIPTS)";; \
		*) opt= sc="$(COMPLIANCE_SCRIPTS)";; esac; \
		sh tests/compliance/daemon.sh $(BUILD) $$r $$opt $(BUILD)/compliance/$$n.json \
			$$sc >$(BUILD)/compliance/$$n.log 2>&1; \
		s=$$?; tail -n 1 $(BUILD)/compliance/$$n.log; \
		[ $$s -eq 77 ] || [ ! -f $(BUILD)/compliance/$$n.json ] || \
			runs="$$runs $(BUILD)/compliance/$$n.json"; \
		[ $$s -eq 0 ] || [ $$s -eq 77 ] || { rc=1; grep -v '^  PASS\|^  SKIP\|^  KNOWN' \
			$(BUILD)/compliance/$$n.log; }; \
		[ -z "$$opt" ] || continue; \
		sh tests/compliance/daemon.sh $(BUILD) $$b --matrix \
			$(BUILD)/compliance/matrix-$$b.json >$(BUILD)/compliance/matrix-$$b.log 2>&1; \
		s=$$?; tail -n 1 $(BUILD)/compliance/matrix-$$b.log; \
		[ $$s -eq 77 ] || [ ! -f $(BUILD)/compliance/matrix-$$b.json ] || \
			matrices="$$matrices --matrix $(BUILD)/compliance/matrix-$$b.json"; \
		[ $$s -eq 0 ] || [ $$s -eq 77 ] || { rc=1; grep 'FAIL' \
			$(BUILD)/compliance/matrix-$$b.log; }; \
	done; \
	CC="$(CC)" python3 tests/compliance/mutants.py tests/compliance/mutants.txt \
		$(BUILD)/compliance/mutants $(BUILD)/compliance/mutants.json $(COMPLIANCE_SCRIPTS) || rc=1; \
	python3 tests/compliance/report.py docs/SPEC.md $(BUILD)/compliance $$runs $$matrices \
		--elsewhere tests/compliance/elsewhere.txt \
		--mutants $(BUILD)/compliance/mutants.json || rc=1; \
	exit $$rc

# The OCI image from our .debs on a Debian minbase (mmdebstrap, this machine's mirror), built
# by podman without a registry; $(BUILD)/image/image.json records its tag, id and size.
IMAGE := localhost/metaroce:$(VERSION)
image: deb
	$(call msg,IMAGE,$(IMAGE))
	$(Q)CONTAINERS_CONF=$(CURDIR)/packaging/container/containers.conf \
		sh packaging/container/build-image.sh $(BUILD)/deb $(BUILD)/image $(IMAGE) >/dev/null

# The image in packaging/k8s's two deployments, node daemon and sidecar, on a testbed.
test-containers: image
	$(call msg,TEST,containers)
	$(Q)IMAGE=$(IMAGE) sh tests/integration/run.sh $(BUILD) tests/system/test_containers.sh

# Each harness starts from seeds the encoder writes, so the corpus follows the wire format.
fuzz: $(FUZZ_BINS) $(CORPUS_GEN)
	$(Q)set -e; for h in $(FUZZ_HARNESSES); do \
		printf '  %-8s %s\n' FUZZ "$$h for $(FUZZ_SECONDS)s"; \
		rm -rf $(FUZZ)/corpus/$$h $(FUZZ)/seeds/$$h; \
		mkdir -p $(FUZZ)/corpus/$$h $(FUZZ)/seeds/$$h $(FUZZ)/artifacts/$$h; \
		$(CORPUS_GEN) $$h $(FUZZ)/seeds/$$h; \
		$(FUZZ)/fuzz_$$h -max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 \
			$$( [ $$h = cli ] && echo -close_fd_mask=3 ) \
			-artifact_prefix=$(FUZZ)/artifacts/$$h/ \
			$(FUZZ)/corpus/$$h $(FUZZ)/seeds/$$h > $(FUZZ)/$$h.log 2>&1 \
			|| { tail -n 60 $(FUZZ)/$$h.log; exit 1; }; \
		grep -E '^stat::number_of_executed_units|^Done' $(FUZZ)/$$h.log | sed 's/^/           /'; \
	done

# The engine in virtual time, side by side with the RoCEv2 baseline (docs/BENCHMARKS.md).
engine-report: $(ENGINE_REPORT)
	$(Q)$(ENGINE_REPORT) $(BUILD)/engine-report.json
	$(call msg,JSON,$(BUILD)/engine-report.json)

$(ENGINE_REPORT): $(OBJ)/bench/engine_report.o $(OBJ)/bench/report_incast.o \
		$(OBJ)/bench/report_failover.o $(OBJ)/tests/harness/netsim.o $(LIBPROTO)
	$(call msg,LD,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) -o $@ $^ $(PROTO_LIBS)

# The seed's claims at its scale in ns-3, beside the RoCEv2 baselines (sim/report.cc): writes
# build/sim-report.json and the measured section of docs/SIMULATION.md with docs/sim/*.png.
sim-report:
	$(Q)$(MAKE) --no-print-directory deps
	$(Q)$(MAKE) --no-print-directory $(SIM_REPORT)
	$(Q)mkdir -p $(BUILD)/sim-report
	$(Q)$(SIM_REPORT) $(BUILD)/sim-report.json $(BUILD)/sim-report
	$(Q)python3 sim/render_report.py $(BUILD)/sim-report.json $(BUILD)/sim-report \
		docs/SIMULATION.md docs/sim

# The fabric benchmarks on testbed/mrc-testbed, side by side with RoCEv2, TCP and UDP:
# bench-quick prints the summary and writes build/bench-quick.json in under 3 minutes; bench
# measures everything and rewrites docs/BENCHMARKS.md's fabric section and docs/bench/*.png.
bench-quick bench:
	$(Q)$(MAKE) --no-print-directory deps
	$(Q)$(MAKE) --no-print-directory programs $(BPF_OBJS) $(XDP_COST)
	$(Q)python3 bench/fabric_bench.py $(if $(filter bench,$@),--full,--quick) $(BUILD)

# Gloo's all-reduce and all-to-all on 4 testbed hosts x 2 planes at 0, 1 and 10% loss, over
# MetaRoCE, the RoCEv2 baseline and Gloo's TCP transport side by side; writes
# build/bench-collectives.json and the collectives section of docs/BENCHMARKS.md.
bench-collectives:
	$(Q)$(MAKE) --no-print-directory deps
	$(Q)$(MAKE) --no-print-directory programs $(BPF_OBJS) $(GLOO_BENCH)
	$(Q)python3 bench/collectives/collectives_bench.py $(BUILD)

# One QP's goodput alone and beside 4,000 idle QPs in the same daemons (median of 3 each), and
# the daemons' and clients' system calls and wakeups per GB; writes build/bench-core.json.
# COMPARE=DIR runs the same on another build (the "before" of a change) in the same run.
bench-core:
	$(Q)$(MAKE) --no-print-directory deps
	$(Q)$(MAKE) --no-print-directory programs $(IDLE_QPS)
	$(Q)python3 bench/core/core_bench.py $(BUILD) $(if $(COMPARE),--compare $(COMPARE))

# One QP's goodput and the daemons' CPU per GB with auth = off, header and full taking turns
# (median of 7 each), on the udp and xdp backends; writes build/bench-auth.json.
bench-auth:
	$(Q)$(MAKE) --no-print-directory deps
	$(Q)$(MAKE) --no-print-directory programs
	$(Q)python3 bench/core/auth_bench.py $(BUILD)

# 64 B ping-pong over metaroced in several busy_poll configurations next to sockperf UDP, with
# wakeups and system calls per round trip; writes build/bench-latency.json.
bench-latency:
	$(Q)$(MAKE) --no-print-directory deps
	$(Q)$(MAKE) --no-print-directory programs
	$(Q)python3 bench/latency_bench.py $(BUILD)

# The XDP fast path's cost per data packet, 64 B to 8 KiB, from BPF_PROG_TEST_RUN.
bench-xdp: $(XDP_COST) $(BPF_OBJS)
	$(Q)$(XDP_COST) $(BUILD)/bpf/metaroce_xdp.bpf.o 100000 $(BUILD)/bench-xdp.json

bench-backend: all
	$(Q)BUILD=$(BUILD) sh bench/backend_bench.sh

# What worker threads buy one daemon: a fixed load with workers = 1 .. the CPUs (bench/).
bench-workers: $(METAROCED) $(METAROCE_CTL) $(METAROCE_PERF) $(LIBMETAROCE) $(METAROCE_RUN)
	$(Q)BUILD=$(BUILD) sh bench/workers_bench.sh

# One connection over one veth: metaroced + ib_write_bw on the udp backend next to iperf3.
bench-udp-vs-tcp: $(METAROCED) $(LIBMETAROCE) $(METAROCE_RUN)
	$(Q)sh bench/udp_vs_tcp.sh $(BUILD) 9000 10

# --- install ---------------------------------------------------------------------------

PREFIX ?= /usr/local
BINDIR ?= $(PREFIX)/bin
SBINDIR ?= $(PREFIX)/sbin
LIBDIR ?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
MANDIR ?= $(PREFIX)/share/man
SYSCONFDIR ?= /etc
UNITDIR ?= $(PREFIX)/lib/systemd/system
TMPFILESDIR ?= $(PREFIX)/lib/tmpfiles.d
SOVERSION := 1
# libmetaroce.so.1 is the ABI (rdma-core's symbol versions plus METAROCE_1.0); the file carries it
LIBMETAROCE_REAL := libmetaroce.so.$(SOVERSION).0.0

install: $(METAROCED) $(METAROCE_CTL) $(METAROCE_PERF) $(LIBMETAROCE) $(METAROCE_RUN)
	$(call msg,INSTALL,$(DESTDIR)$(PREFIX))
	$(Q)install -d $(DESTDIR)$(SBINDIR) $(DESTDIR)$(BINDIR) $(DESTDIR)$(LIBDIR)/pkgconfig \
		$(DESTDIR)$(INCLUDEDIR)/metaroce $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(MANDIR)/man5 \
		$(DESTDIR)$(MANDIR)/man8 $(DESTDIR)$(SYSCONFDIR)/metaroce $(DESTDIR)$(UNITDIR) \
		$(DESTDIR)$(TMPFILESDIR)
	$(Q)install -m 0755 $(METAROCED) $(DESTDIR)$(SBINDIR)/metaroced
	$(Q)install -m 0755 $(METAROCE_CTL) $(METAROCE_PERF) $(METAROCE_RUN) $(DESTDIR)$(BINDIR)/
	$(Q)install -m 0755 $(LIBMETAROCE) $(DESTDIR)$(LIBDIR)/$(LIBMETAROCE_REAL)
	$(Q)ln -sf $(LIBMETAROCE_REAL) $(DESTDIR)$(LIBDIR)/libmetaroce.so.$(SOVERSION)
	$(Q)ln -sf libmetaroce.so.$(SOVERSION) $(DESTDIR)$(LIBDIR)/libmetaroce.so
	$(Q)install -m 0644 lib/include/metaroce/metaroce.h $(DESTDIR)$(INCLUDEDIR)/metaroce/
	$(Q)sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@LIBDIR@|$(LIBDIR)|' \
		-e 's|@INCLUDEDIR@|$(INCLUDEDIR)|' -e 's|@VERSION@|$(VERSION)|' \
		packaging/pkgconfig/libmetaroce.pc.in >$(DESTDIR)$(LIBDIR)/pkgconfig/libmetaroce.pc
	$(Q)install -m 0644 packaging/man/metaroce-run.1 packaging/man/metaroce-perf.1 \
		$(DESTDIR)$(MANDIR)/man1/
	$(Q)install -m 0644 packaging/man/metaroced.conf.5 $(DESTDIR)$(MANDIR)/man5/
	$(Q)install -m 0644 packaging/man/metaroced.8 packaging/man/metaroce-ctl.8 \
		$(DESTDIR)$(MANDIR)/man8/
	$(Q)sed 's|/usr/sbin/metaroced|$(SBINDIR)/metaroced|' packaging/systemd/metaroced.service \
		>$(DESTDIR)$(UNITDIR)/metaroced.service
	$(Q)install -m 0644 packaging/tmpfiles/metaroce.conf $(DESTDIR)$(TMPFILESDIR)/
	$(Q)[ -e $(DESTDIR)$(SYSCONFDIR)/metaroce/metaroced.conf ] || \
		install -m 0644 packaging/config/metaroced.conf $(DESTDIR)$(SYSCONFDIR)/metaroce/

# Debian packages in $(BUILD)/deb (packaging/debian; the container image starts from them).
deb:
	$(call msg,DEB,$(BUILD)/deb)
	$(Q)sh packaging/build-deb.sh $(BUILD)/deb

clean:
	$(call msg,CLEAN,$(BUILD))
	$(Q)rm -rf $(BUILD)

# --- rules -----------------------------------------------------------------------------

$(OBJ)/%.o: %.c
	$(call msg,CC,$<)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CPPFLAGS) $(MRC_CFLAGS) $(CFLAGS) $(DEPFLAGS) \
		$(if $(filter tests/unit/%,$<),$(CHECK_CFLAGS)) \
		-c $< -o $@

$(TSAN)/obj/%.o: %.c
	$(call msg,CC-TSAN,$<)
	$(Q)mkdir -p $(@D)
	$(Q)$(CLANG) $(CPPFLAGS) $(MRC_CFLAGS) $(CFLAGS) $(DEPFLAGS) $(TSAN_FLAGS) -c $< -o $@

$(TSAN_METAROCED): $(TSAN_DAEMON_OBJS)
	$(call msg,LD-TSAN,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CLANG) $(CFLAGS) $(TSAN_FLAGS) -o $@ $^ $(DAEMON_LIBS) $(PROTO_LIBS)

$(SAN)/obj/%.o: %.c
	$(call msg,CC-SAN,$<)
	$(Q)mkdir -p $(@D)
	$(Q)$(CLANG) $(CPPFLAGS) $(MRC_CFLAGS) $(CFLAGS) $(DEPFLAGS) $(SAN_FLAGS) \
		$(if $(filter tests/%,$<),$(CHECK_CFLAGS)) -c $< -o $@

$(OBJ)/%.bpf.o: %.c
	$(call msg,BPF,$<)
	$(Q)mkdir -p $(@D)
	$(Q)$(CLANG) $(BPF_CFLAGS) $(DEPFLAGS) -c $< -o $@

$(BUILD)/bpf/%.bpf.o: bpf/%.bpf.c
	$(call msg,BPF,$<)
	$(Q)mkdir -p $(@D)
	$(Q)$(CLANG) $(BPF_CFLAGS) $(DEPFLAGS) -c $< -o $@

# The daemon carries its XDP program inside (bpftool's skeleton): nothing to find at run time.
XDP_SKEL := $(BUILD)/bpf/metaroce_xdp.skel.h
$(XDP_SKEL): $(BUILD)/bpf/metaroce_xdp.bpf.o
	$(call msg,SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< name metaroce_xdp > $@.tmp && mv $@.tmp $@
$(OBJ)/daemon/io/fastpath.o $(SAN)/obj/daemon/io/fastpath.o: $(XDP_SKEL)
# ... and its workers' socket selector.
WORKERS_SKEL := $(BUILD)/bpf/metaroce_workers.skel.h
$(WORKERS_SKEL): $(BUILD)/bpf/metaroce_workers.bpf.o
	$(call msg,SKEL,$@)
	$(Q)$(BPFTOOL) gen skeleton $< name metaroce_workers > $@.tmp && mv $@.tmp $@
$(OBJ)/daemon/io/worker.o $(SAN)/obj/daemon/io/worker.o $(TSAN)/obj/daemon/io/worker.o: \
	$(WORKERS_SKEL)
$(TSAN)/obj/daemon/io/fastpath.o: $(XDP_SKEL)

$(BUILD)/bpf/%.bpf.o: testbed/bpf/%.bpf.c
	$(call msg,BPF,$<)
	$(Q)mkdir -p $(@D)
	$(Q)$(CLANG) $(BPF_CFLAGS) $(DEPFLAGS) -c $< -o $@

# Programs the tests load beside ours (test_xdp: another XDP program on a plane interface).
$(BUILD)/tests/bpf/%.bpf.o: tests/bpf/%.bpf.c
	$(call msg,BPF,$<)
	$(Q)mkdir -p $(@D)
	$(Q)$(CLANG) $(BPF_CFLAGS) $(DEPFLAGS) -c $< -o $@

# The XDP program's fixtures and cost build their frames with the real encoder.
XDP_ENV := tests/bpf/xdp_env.c tests/bpf/xdp_env.h lib/include/metaroce/xdp.h
$(BUILD)/tests/bpf/test_xdp: tests/bpf/test_xdp.c $(XDP_ENV) $(LIBPROTO)
	$(call msg,LD,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CPPFLAGS) -Itests/bpf $(MRC_CFLAGS) $(CFLAGS) -o $@ $(filter %.c %.a,$^) -lbpf $(PROTO_LIBS)

$(XDP_COST): bench/xdp_cost.c $(XDP_ENV) $(LIBPROTO)
	$(call msg,LD,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CPPFLAGS) -Itests/bpf $(MRC_CFLAGS) $(CFLAGS) -o $@ $(filter %.c %.a,$^) -lbpf $(PROTO_LIBS)

$(BUILD)/tests/bpf/%: tests/bpf/%.c
	$(call msg,LD,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CPPFLAGS) $(MRC_CFLAGS) $(CFLAGS) $(DEPFLAGS) -o $@ $< -lbpf

$(OBJ)/pic/%.o: %.c
	$(call msg,CC-PIC,$<)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CPPFLAGS) $(MRC_CFLAGS) $(CFLAGS) $(DEPFLAGS) -fPIC \
		-c $< -o $@

# Every exported symbol carries rdma-core's version; one listed but not defined is an error.
$(LIBMETAROCE): $(VERBS_OBJS) lib/verbs/libmetaroce.map
	$(call msg,LD,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS) -shared -Wl,-soname,libmetaroce.so.1 \
		-Wl,--version-script=lib/verbs/libmetaroce.map -Wl,--no-undefined-version \
		-Wl,-z,defs -o $@ $(VERBS_OBJS) -lpthread
	$(Q)ln -sf libmetaroce.so.1 $(@D)/libmetaroce.so

$(IDLE_QPS): bench/core/idle_qps.c
	$(call msg,LD,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(MRC_CFLAGS) $(CFLAGS) $(LDFLAGS) -o $@ $< -libverbs

$(OBJ)/sim/%.o: sim/%.cc
	$(call msg,CXX,$<)
	$(Q)mkdir -p $(@D)
	$(Q)$(CXX) -std=c++17 $(CXX_WARNINGS) $(CXXFLAGS) -Ilib -Ilib/include $(DEPFLAGS) -c $< -o $@

$(SIM_CHECK) $(SIM_REPORT): $(BUILD)/sim/metaroce-sim-%: $(OBJ)/sim/%.o $(SIM_OBJS) $(LIBPROTO)
	$(call msg,LD,$@)
	$(Q)[ -n "$(NS3_LIBS)" ] || { echo "ns-3 (libns3-dev) is missing: make deps"; exit 1; }
	$(Q)mkdir -p $(@D)
	$(Q)$(CXX) $(CXXFLAGS) $(LDFLAGS) -o $@ $^ $(NS3_LIBS) $(PROTO_LIBS)

$(GLOO_BENCH): bench/collectives/gloo_bench.cc
	$(call msg,CXX-LD,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CXX) -std=c++17 $(CXX_WARNINGS) $(CXXFLAGS) $(LDFLAGS) -rdynamic -o $@ $< \
		-lgloo -libverbs -lpthread

$(METAROCE_RUN): cli/metaroce-run
	$(call msg,GEN,$@)
	$(Q)mkdir -p $(@D)
	$(Q)install -m 0755 $< $@

# Generic verbs programs: built against rdma-core's libibverbs, run through libmetaroce.
$(BUILD)/tests/verbs/verbs_check: tests/verbs/verbs_check.c $(wildcard tests/verbs/check/*.c \
				  tests/verbs/check/*.h)
	$(call msg,LD,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CPPFLAGS) -Itests/verbs $(MRC_CFLAGS) $(CFLAGS) -o $@ $(filter %.c,$^) -libverbs

$(BUILD)/tests/verbs/verbs_api_check: tests/verbs/verbs_api_check.c tests/verbs/rc_connect.c \
				      tests/verbs/rc_connect.h \
				      $(wildcard tests/verbs/api/*.c tests/verbs/api/*.h)
	$(call msg,LD,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CPPFLAGS) -Itests/verbs $(MRC_CFLAGS) $(CFLAGS) -o $@ $(filter %.c,$^) \
		-libverbs -ldl

$(BUILD)/tests/ucx/ucp_check: tests/ucx/ucp_check.c
	$(call msg,LD,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CPPFLAGS) $(MRC_CFLAGS) $(CFLAGS) -o $@ $< $$(pkg-config --libs ucx)

$(BUILD)/tests/verbs/atomic_check: tests/verbs/atomic_check.c tests/verbs/rc_connect.c \
				   tests/verbs/rc_connect.h
	$(call msg,LD,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CPPFLAGS) -Itests/verbs $(MRC_CFLAGS) $(CFLAGS) -o $@ $(filter %.c,$^) -libverbs

# An rdma_cm program: built against rdma-core's librdmacm, run through libmetaroce.
$(BUILD)/tests/verbs/cm_check: tests/verbs/cm_check.c
	$(call msg,LD,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CPPFLAGS) $(MRC_CFLAGS) $(CFLAGS) -o $@ $< -lrdmacm -libverbs

# Generic verbs programs: built against rdma-core's libibverbs, run through libmetaroce.
$(BUILD)/tests/verbs/%: tests/verbs/%.c
	$(call msg,LD,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CPPFLAGS) $(MRC_CFLAGS) $(CFLAGS) -o $@ $< -libverbs -ldl

# Attackers (tests/integration/attack/): plain programs against the daemon's sockets.
$(BUILD)/tests/integration/attack/%: tests/integration/attack/%.c
	$(call msg,LD,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CPPFLAGS) $(MRC_CFLAGS) $(CFLAGS) -o $@ $<

# ... the forger builds its packets with the engine's encoder
$(BUILD)/tests/integration/attack/forge: tests/integration/attack/forge.c $(LIBPROTO)
	$(call msg,LD,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CPPFLAGS) $(MRC_CFLAGS) $(CFLAGS) -o $@ $^ $(PROTO_LIBS)

# ... and the clients that speak the control protocol themselves (tests/verbs/ctl_client.c)
$(BUILD)/tests/verbs/hostile_client $(BUILD)/tests/integration/attack/hoard: \
		$(BUILD)/%: $(OBJ)/%.o $(OBJ)/tests/verbs/ctl_client.o $(LIBPROTO)
	$(call msg,LD,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) -o $@ $^ $(PROTO_LIBS)

$(BUILD)/tests/verbs/test_unsupported: tests/verbs/test_unsupported.c $(LIBMETAROCE)
	$(call msg,LD,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CPPFLAGS) $(MRC_CFLAGS) $(CFLAGS) -o $@ $< -L$(BUILD)/lib -l:libmetaroce.so.1

$(LIBPROTO): $(PROTO_OBJS)
	$(call msg,AR,$@)
	$(Q)mkdir -p $(@D)
	$(Q)rm -f $@ && ar rcs $@ $^

$(SAN_LIBPROTO): $(SAN_PROTO_OBJS)
	$(call msg,AR,$@)
	$(Q)mkdir -p $(@D)
	$(Q)rm -f $@ && ar rcs $@ $^

$(LIBDAEMON): $(DAEMON_OBJS)
	$(call msg,AR,$@)
	$(Q)mkdir -p $(@D)
	$(Q)rm -f $@ && ar rcs $@ $^

$(SAN_LIBDAEMON): $(SAN_DAEMON_OBJS)
	$(call msg,AR,$@)
	$(Q)mkdir -p $(@D)
	$(Q)rm -f $@ && ar rcs $@ $^

$(METAROCE_CTL): $(OBJ)/cli/metaroce-ctl.o
	$(call msg,LD,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ $(SODIUM_LIBS)

# A verbs program like any other: linked to libibverbs, run through metaroce-run for metaroced.
$(METAROCE_PERF): cli/metaroce-perf.c $(wildcard cli/perf/*.c cli/perf/*.h)
	$(call msg,LD,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CPPFLAGS) -Icli $(MRC_CFLAGS) $(CFLAGS) $(LDFLAGS) -o $@ $(filter %.c,$^) -libverbs -lm

$(METAROCED): $(OBJ)/daemon/main.o $(LIBDAEMON) $(LIBPROTO)
	$(call msg,LD,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ $(DAEMON_LIBS) $(PROTO_LIBS)

$(SAN_METAROCED): $(SAN)/obj/daemon/main.o $(SAN_LIBDAEMON) $(SAN_LIBPROTO)
	$(call msg,LD-SAN,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CLANG) $(CFLAGS) $(SAN_FLAGS) -o $@ $^ $(DAEMON_LIBS) $(PROTO_LIBS)

$(UNIT_RUNNER): $(UNIT_OBJS) $(LIBDAEMON) $(LIBPROTO)
	$(call msg,LD,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) -o $@ $^ $(CHECK_LIBS) $(DAEMON_LIBS) $(PROTO_LIBS)

$(SAN_UNIT_RUNNER): $(SAN_UNIT_OBJS) $(SAN_LIBDAEMON) $(SAN_LIBPROTO)
	$(call msg,LD,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CLANG) $(CFLAGS) $(SAN_FLAGS) -o $@ $^ $(CHECK_LIBS) $(DAEMON_LIBS) $(PROTO_LIBS)

# Harnesses compile the library sources themselves: libFuzzer needs its coverage
# instrumentation in the code under test, not only in the harness.
$(FUZZ)/fuzz_%: tests/fuzz/fuzz_%.c $(PROTO_SRCS) $(DAEMON_SRCS) $(XDP_SKEL) \
		$(wildcard lib/include/metaroce/*.h lib/proto/*.h lib/shm/*.h daemon/*.h daemon/*/*.h \
			tests/fuzz/*.h)
	$(call msg,FUZZ-LD,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CLANG) $(CPPFLAGS) $(MRC_CFLAGS) $(CFLAGS) $(SAN_FLAGS) -fsanitize=fuzzer -o $@ \
		$(filter %.c,$^) $(DAEMON_LIBS) $(PROTO_LIBS)

# These harnesses run two daemon cores in the unit tests' virtual-time world.
$(FUZZ)/fuzz_admission $(FUZZ)/fuzz_requests: $(FUZZ)/fuzz_%: tests/fuzz/fuzz_%.c \
		tests/unit/core_world.c tests/unit/conn_xfer.c \
		tests/harness/netsim.c $(PROTO_SRCS) \
		$(DAEMON_SRCS) $(XDP_SKEL) $(wildcard lib/include/metaroce/*.h lib/proto/*.h \
			lib/shm/*.h daemon/*.h daemon/*/*.h tests/unit/core_world.h \
			tests/fuzz/check_abort.h)
	$(call msg,FUZZ-LD,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CLANG) $(CPPFLAGS) $(MRC_CFLAGS) $(CFLAGS) -include tests/fuzz/check_abort.h \
		$(SAN_FLAGS) -fsanitize=fuzzer -o $@ $(filter %.c,$^) $(DAEMON_LIBS) $(PROTO_LIBS)

# The CLI harness runs metaroce-ctl itself, its main renamed.
$(FUZZ)/fuzz_cli: tests/fuzz/fuzz_cli.c cli/metaroce-ctl.c $(wildcard lib/include/metaroce/*.h)
	$(call msg,FUZZ-LD,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CLANG) $(CPPFLAGS) $(MRC_CFLAGS) $(CFLAGS) $(SAN_FLAGS) -fsanitize=fuzzer \
		-Dmain=metaroce_ctl_main -Wno-missing-prototypes -o $@ $(filter %.c,$^) $(SODIUM_LIBS)

$(CORPUS_GEN): $(OBJ)/tests/fuzz/gen_corpus.o $(LIBPROTO)
	$(call msg,LD,$@)
	$(Q)mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) -o $@ $^ $(PROTO_LIBS)

# (not into the booted systems' root file systems of test-systemd, whose /etc/rc2.d is no makefile)
-include $(shell find $(BUILD) -path $(BUILD)/system -prune -o -type f -name '*.d' -print \
	2>/dev/null)
