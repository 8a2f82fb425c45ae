# Shared by the integration tests: two hosts, two planes, in network namespaces.
#
#        namespace A                                namespace B
#   +-----------------+   plane 0 (veth)   +-----------------+
#   | a0 198.18.0.1/24|--------------------|b0 198.18.0.2/24 |
#   | a1 198.19.0.1/24|--------------------|b1 198.19.0.2/24 |
#   +-----------------+   plane 1 (veth)   +-----------------+
#
# Names carry the test's PID so runs never collide; `cleanup` (run on every exit) kills what
# the test started and deletes the namespaces, which takes their veths with them.

TAG=mrc$$
NS_A=${TAG}a
NS_B=${TAG}b
PIDS=""
TMP=$(mktemp -d "${TMPDIR:-/tmp}/metaroce-it.XXXXXX")

TESTBED_TOOL=$(cd "$(dirname "$0")/../.." && pwd)/testbed/mrc-testbed
TESTBED=""	# set by testbed_up: a testbed (testbed/mrc-testbed) to take down too

cleanup() {
	for p in $PIDS; do kill -KILL "$p" 2>/dev/null; done
	ip netns del "$NS_A" 2>/dev/null
	ip netns del "$NS_B" 2>/dev/null
	[ -z "$TESTBED" ] || "$TESTBED_TOOL" -n "$TESTBED" down
	[ -n "${KEEP_TMP:-}" ] || rm -rf "$TMP" # KEEP_TMP=1 keeps the logs of a failing run
}
trap cleanup EXIT INT TERM

skip() {
	echo "$1"
	exit 77
}

fail() {
	echo "FAIL: $*"
	exit 1
}

# Two namespaces joined by one veth pair per plane, with a queue each way for each worker
# (METAROCE_TEST_WORKERS, as start_daemon runs): the xdp backend's workers each bind AF_XDP
# sockets to queues of their own.
two_hosts() {
	[ "$(id -u)" -eq 0 ] || skip "needs root for network namespaces"
	ip netns add "$NS_A" 2>/dev/null || skip "cannot create network namespaces here"
	ip netns add "$NS_B" || fail "second namespace"
	q=${METAROCE_TEST_WORKERS:-2}
	for p in 0 1; do
		ip link add "${TAG}a$p" netns "$NS_A" numtxqueues "$q" numrxqueues "$q" type veth \
			peer "${TAG}b$p" netns "$NS_B" numtxqueues "$q" numrxqueues "$q" ||
			fail "veth for plane $p"
		ip -n "$NS_A" addr add "198.1$((8 + p)).0.1/24" dev "${TAG}a$p"
		ip -n "$NS_B" addr add "198.1$((8 + p)).0.2/24" dev "${TAG}b$p"
		ip -n "$NS_A" link set "${TAG}a$p" up
		ip -n "$NS_B" link set "${TAG}b$p" up
	done
	ip -n "$NS_A" link set lo up
	ip -n "$NS_B" link set lo up
}

# start_daemon NS NAME ARGS...: metaroced in a namespace, its log in $TMP/NAME.log;
# METAROCED names another build of it (make integration-asan, integration-tsan). It runs
# METAROCE_TEST_WORKERS worker threads (2 unless set: every test runs QPs on two workers and
# the control thread beside them; make integration-asan runs 1)
# Every daemon a test starts authenticates its peers and packets (SPEC 14.6) under one
# cluster key per test (none while NO_CLUSTER_KEY is set), with a key pair of its own in
# $TMP; a test's own settings come after and win (auth=off, another cluster_key_file).
start_daemon() {
	ns=$1 name=$2
	shift 2
	[ -f "$TMP/cluster.key" ] || (umask 077 && head -c 32 /dev/urandom >"$TMP/cluster.key")
	[ -n "${NO_CLUSTER_KEY:-}" ] || set -- --set "cluster_key_file=$TMP/cluster.key" "$@"
	set -- --set "workers=${METAROCE_TEST_WORKERS:-2}" "$@"
	ip netns exec "$ns" "${METAROCED:-$BUILD/sbin/metaroced}" \
		--set "key_file=$TMP/$name.key" "$@" >"$TMP/$name.log" 2>&1 &
	PIDS="$PIDS $!"
	eval "PID_$name=$!"
}

# Tests wait on state, not on time: a condition polled with a bound (wait_for, wait_until,
# ctl_wait), never a bare sleep that hopes it was long enough.

# now_cs: sets NOW_CS to the time since boot in hundredths of a second (dash has no $SECONDS)
now_cs() {
	read -r NOW_CS _ </proc/uptime
	NOW_CS=$(cs_of "$NOW_CS")
}

# cs_of SECONDS: SECONDS (5, 0.5, 12.34) in hundredths
cs_of() {
	case $1 in
	*.*) cs_i=${1%.*} cs_f=${1#*.}00 ;;
	*) cs_i=$1 cs_f=00 ;;
	esac
	echo $((${cs_i:-0} * 100 + 1${cs_f%"${cs_f#??}"} - 100))
}

# wait_until SECONDS DESCRIPTION COMMAND...: runs COMMAND (a program or a function) every
# 0.05 s until it succeeds. After SECONDS (decimals allowed) the test fails with DESCRIPTION,
# after the command's output from its last try and the tail of every log in $TMP. The command
# runs in this shell with its output in a file: it must not call fail itself.
wait_until() {
	wu_secs=$1 wu_what=$2
	shift 2
	now_cs
	wu_end=$((NOW_CS + $(cs_of "$wu_secs")))
	while ! "$@" >"$TMP/wait_until.out" 2>&1; do
		now_cs
		if [ "$NOW_CS" -ge "$wu_end" ]; then
			echo "--- the last try of: $*"
			cat "$TMP/wait_until.out"
			for wu_log in "$TMP"/*.log; do
				[ -f "$wu_log" ] || continue
				echo "--- the end of $wu_log:"
				tail -n 8 "$wu_log"
			done
			fail "$wu_what (waited ${wu_secs}s)"
		fi
		sleep 0.05
	done
}

# gone PID: that process has ended
gone() { ! kill -0 "$1" 2>/dev/null; }

# listening NS tcp|udp PORT: a socket in namespace NS is bound to PORT (a TCP one listens)
listening() {
	case $2 in tcp) ls_p=t ;; *) ls_p=u ;; esac
	ip netns exec "$1" ss -Hln$ls_p "sport = :$3" | grep -q .
}

# wait_listening NS PORT: a server started in the background listens on TCP PORT in NS, so its
# client may connect (ibv_rc_pingpong and perftest try once; verbs_check and metaroce-perf retry)
wait_listening() {
	wait_until 10 "nothing listens on TCP port $2 in $1" listening "$1" tcp "$2"
}

# The line metaroced logs once it serves, its control socket open: wait_for "$TMP/NAME.log"
# "$DAEMON_UP". (Not "backend ": "backend auto: xdp unavailable (...)" comes before it.)
DAEMON_UP="node [0-9a-f]*: backend "

# wait_for FILE PATTERN [SECONDS]: a line matching PATTERN is in FILE (a log)
wait_for() {
	i=0
	while [ $i -lt $((${3:-5} * 10)) ]; do
		grep -q "$2" "$1" 2>/dev/null && return 0
		sleep 0.1
		i=$((i + 1))
	done
	echo "--- $1:"
	cat "$1"
	fail "no '$2' in $1 after ${3:-5}s"
}

# Two hosts, a daemon on each, both planes; control sockets $TMP/a.sock and $TMP/b.sock.
two_daemons() {
	two_hosts
	start_two_daemons "$@"
	wait_for "$TMP/a.log" "$DAEMON_UP"
	wait_for "$TMP/b.log" "$DAEMON_UP"
}

# start_two_daemons ARGS...: two_daemons' daemons (after two_hosts), not waited for
start_two_daemons() {
	start_daemon "$NS_A" a --set "plane=0 ${TAG}a0 198.18.0.1" \
		--set "plane=1 ${TAG}a1 198.19.0.1" --set "peer_prefix=198.18.0.0/15" \
		--set "control_socket=$TMP/a.sock" "$@"
	start_daemon "$NS_B" b --set "plane=0 ${TAG}b0 198.18.0.2" \
		--set "plane=1 ${TAG}b1 198.19.0.2" --set "peer_prefix=198.18.0.0/15" \
		--set "control_socket=$TMP/b.sock" "$@"
}

# on_a / on_b PROGRAM ARGS...: a verbs program through metaroce-run on that host's daemon
on_a() {
	ip netns exec "$NS_A" env METAROCE_SOCKET="$TMP/a.sock" "$BUILD/bin/metaroce-run" "$@"
}
on_b() {
	ip netns exec "$NS_B" env METAROCE_SOCKET="$TMP/b.sock" "$BUILD/bin/metaroce-run" "$@"
}

# bg_a / bg_b LOG PROGRAM ARGS...: the same in the background; BG is its PID (the program's
# own: every step execs the next), added to what cleanup kills
bg_a() {
	log=$1
	shift
	ip netns exec "$NS_A" env METAROCE_SOCKET="$TMP/a.sock" "$BUILD/bin/metaroce-run" "$@" \
		>"$log" 2>&1 &
	BG=$!
	PIDS="$PIDS $BG"
}
bg_b() {
	log=$1
	shift
	ip netns exec "$NS_B" env METAROCE_SOCKET="$TMP/b.sock" "$BUILD/bin/metaroce-run" "$@" \
		>"$log" 2>&1 &
	BG=$!
	PIDS="$PIDS $BG"
}

# split_args SERVER_ARGS -- CLIENT_ARGS: sets $sargs and $cargs (words without spaces)
split_args() {
	sargs="" cargs="" seen=""
	for x in "$@"; do
		if [ "$x" = "--" ]; then seen=1; elif [ -n "$seen" ]; then cargs="$cargs $x"; else sargs="$sargs $x"; fi
	done
}

# verbs_pair NAME SERVER_ARGS -- CLIENT_ARGS: tests/verbs/verbs_check server on B, client on
# A; both must verify every byte. Logs in $TMP/NAME.{server,client}.log.
verbs_pair() {
	name=$1
	shift
	split_args "$@"
	# shellcheck disable=SC2086
	bg_b "$TMP/$name.server.log" timeout 120 "$BUILD/tests/verbs/verbs_check" $sargs
	srv=$BG
	# shellcheck disable=SC2086
	on_a timeout 120 "$BUILD/tests/verbs/verbs_check" $cargs 198.18.0.2 >"$TMP/$name.client.log" 2>&1
	crc=$?
	wait "$srv"
	src=$?
	if [ $crc -ne 0 ] || [ $src -ne 0 ]; then
		echo "--- $name server (exit $src):"; cat "$TMP/$name.server.log"
		echo "--- $name client (exit $crc):"; cat "$TMP/$name.client.log"
		echo "--- daemon a:"; tail -n 20 "$TMP/a.log"
		echo "--- daemon b:"; tail -n 20 "$TMP/b.log"
		fail "verbs_check $name"
	fi
	grep "verbs_check: OK" "$TMP/$name.client.log"
}

# run_pair NAME PORT PROGRAM ARGS...: PROGRAM ARGS through metaroce-run, as a server on B
# (waited for until it listens on TCP PORT) and as its client on A, which names B's plane-0
# address last; both must exit 0. Logs in $TMP/NAME.{server,client}.log.
run_pair() {
	name=$1 port=$2
	shift 2
	bg_b "$TMP/$name.server.log" timeout 60 "$@"
	srv=$BG
	wait_listening "$NS_B" "$port"
	on_a timeout 60 "$@" 198.18.0.2 >"$TMP/$name.client.log" 2>&1 ||
		{ cat "$TMP/$name.client.log" "$TMP/$name.server.log"; fail "$name: client"; }
	wait "$srv" || { cat "$TMP/$name.server.log"; fail "$name: server"; }
}

# ctl_true SOCKET OBJECT PYTHON: whether a Python expression over `j`, metaroce-ctl -j OBJECT's
# parsed output, holds; the JSON is printed when it does not
ctl_true() {
	# shellcheck disable=SC2086
	"$BUILD/bin/metaroce-ctl" -S "$1" -j $2 | python3 -c "
import json, sys
j = json.load(sys.stdin)
ok = $3
if not ok:
    print(json.dumps(j, indent=1))
sys.exit(0 if ok else 1)"
}

# ctl_check SOCKET OBJECT PYTHON: the expression holds now, or the test fails
ctl_check() {
	ctl_true "$@" || fail "metaroce-ctl $2: expected $3"
}

# ctl_wait SECONDS SOCKET OBJECT PYTHON: polls metaroce-ctl -j OBJECT until the expression holds,
# for at most SECONDS
ctl_wait() {
	cw_secs=$1
	shift
	wait_until "$cw_secs" "metaroce-ctl -S $1 -j $2: never $3" ctl_true "$@"
}

# status_probe SOCKET PID OUT: in the background (its PID in PROBE), `metaroce-ctl status`
# asked back to back for as long as process PID lives, and at least once (a PID that ended
# before the probe started is no reason to fail); it fails unless every answer came, each
# within 1 s, and prints how many and the slowest into OUT
status_probe() {
	python3 - "$BUILD/bin/metaroce-ctl" "$1" "$2" >"$3" 2>&1 <<'PY' &
import os, subprocess, sys, time
ctl, sock, watched = sys.argv[1], sys.argv[2], int(sys.argv[3])
worst, n = 0.0, 0
while True:
    try:
        os.kill(watched, 0)
    except ProcessLookupError:
        if n > 0:
            break
    t = time.monotonic()
    r = subprocess.run(["timeout", "5", ctl, "-S", sock, "status"], capture_output=True)
    took = time.monotonic() - t
    if r.returncode != 0:
        print("status failed (exit %d) after %.3f s: %s" % (r.returncode, took, r.stderr))
        sys.exit(1)
    worst, n = max(worst, took), n + 1
print("%d status answers, the slowest in %.3f s" % (n, worst))
sys.exit(0 if n > 0 and worst < 1.0 else 1)
PY
	PROBE=$!
	PIDS="$PIDS $PROBE"
}

# ctl_json SOCKET OBJECT PYTHON: prints the expression over `j` (a list: one item a line)
ctl_json() {
	# shellcheck disable=SC2086
	"$BUILD/bin/metaroce-ctl" -S "$1" -j $2 | python3 -c "
import json, sys
j = json.load(sys.stdin)
v = $3
print('\\n'.join(map(str, v)) if isinstance(v, (list, tuple)) else v)"
}

# What the kernel allowed is read from the daemon, never assumed: the backend (auto takes xdp
# when it attaches, else udp) and, per plane, the XDP mode (native, or generic where the driver
# has none) and whether the program runs alone or behind libxdp's dispatcher.

# backend_of SOCKET: the backend as the daemon's start-up log line and `metaroce-ctl status` word
# it, built from -j xdp: "backend xdp (IF MODE, IF MODE)" with each plane's mode, or "backend
# udp" with, in parentheses, why auto did not take xdp (if it did not)
backend_of() {
	"$BUILD/bin/metaroce-ctl" -S "$1" -j xdp | python3 -c '
import json, sys
j = json.load(sys.stdin)
if j["backend"] == "xdp":
    print("backend xdp (%s)" % ", ".join("%s %s" % (p["ifname"], p["xdp"]) for p in j["planes"]))
else:
    print("backend " + j["backend"] + (" (%s)" % j["note"] if j["note"] else ""))'
}

# xdp_of SOCKET PLANE: sets XDP_MODE (native, generic; none without a program) and XDP_ATTACH
# (alone, dispatcher; none) of that plane from -j xdp, and checks that `metaroce-ctl xdp` says
# the same in words on the plane's line ("XDP native, alone", "XDP generic (skb), libxdp
# dispatcher", "no XDP program: backend udp")
xdp_of() {
	ctl_json "$1" xdp "[str(p[k] or 'none') for p in j['planes'] if p['plane'] == $2 for k in ('xdp', 'attach')]" \
		>"$TMP/xdp_of.txt" || fail "metaroce-ctl -S $1 -j xdp"
	{ read -r XDP_MODE && read -r XDP_ATTACH; } <"$TMP/xdp_of.txt" || fail "no plane $2 in -j xdp"
	case $XDP_MODE in
	native) xo_words="XDP native" ;;
	generic) xo_words="XDP generic (skb)" ;;
	*) xo_words="no XDP program: backend udp" ;;
	esac
	case $XDP_ATTACH in
	alone) xo_words="$xo_words, alone" ;;
	dispatcher) xo_words="$xo_words, libxdp dispatcher" ;;
	esac
	"$BUILD/bin/metaroce-ctl" -S "$1" xdp >"$TMP/xdp_of.show" || fail "metaroce-ctl -S $1 xdp"
	grep -q "^plane $2 [^ ]* *$xo_words\$" "$TMP/xdp_of.show" ||
		{ cat "$TMP/xdp_of.show"; fail "metaroce-ctl xdp does not say '$xo_words' of plane $2, as -j xdp does"; }
}

# testbed_up ARGS...: a multi-plane fabric (testbed/mrc-testbed up), named after this test's
# PID and taken down by cleanup; TB runs the tool on it
testbed_up() {
	TESTBED=t$(($$ % 100000))
	TB="$TESTBED_TOOL -n $TESTBED"
	# shellcheck disable=SC2086
	$TB up --bpf-object "$BUILD/bpf/impair.bpf.o" "$@" >"$TMP/testbed.txt" ||
		fail "mrc-testbed up $*"
	cat "$TMP/testbed.txt"
}

# testbed_daemons PLANES HOST...: metaroced on each testbed host over all its planes; control
# sockets $TMP/hN.sock, logs $TMP/hN.log; BACKEND (default auto) picks the backend
testbed_daemons() {
	planes=$1
	shift
	for h in "$@"; do
		set -- --set "peer_prefix=198.18.0.0/16" --set "control_socket=$TMP/h$h.sock" \
			--set "backend=${BACKEND:-auto}"
		p=0
		while [ $p -lt "$planes" ]; do
			set -- "$@" --set "plane=$p p$p 198.18.$((32 * p + h)).2"
			p=$((p + 1))
		done
		start_daemon "mtb-$TESTBED-h$h" "h$h" "$@"
	done
}

PERF=$BUILD/bin/metaroce-perf
port=18710

# perf_pair NAME SERVER_ARGS -- CLIENT_ARGS: server on B, client on A, client's -j in $TMP/NAME.json
perf_pair() {
	name=$1
	shift
	split_args "$@"
	port=$((port + 1))
	# shellcheck disable=SC2086
	bg_b "$TMP/$name.server.log" timeout 120 "$PERF" -p $port $sargs
	srv=$BG
	# shellcheck disable=SC2086
	on_a timeout 120 "$PERF" -p $port -j $cargs 198.18.0.2 >"$TMP/$name.json" \
		2>"$TMP/$name.client.log"
	crc=$?
	wait "$srv"
	src=$?
	if [ $crc -ne 0 ] || [ $src -ne 0 ]; then
		echo "--- $name server (exit $src):"; cat "$TMP/$name.server.log"
		echo "--- $name client (exit $crc):"; cat "$TMP/$name.client.log" "$TMP/$name.json"
		echo "--- daemon a:"; tail -n 20 "$TMP/a.log"
		echo "--- daemon b:"; tail -n 20 "$TMP/b.log"
		fail "metaroce-perf $name"
	fi
}

# json_check NAME PYTHON: an expression over `j`, the client's parsed -j summary
json_check() {
	python3 - "$TMP/$1.json" "$2" <<'PY' || fail "metaroce-perf $1: $2 is false"
import json, sys
j = json.load(open(sys.argv[1]))
print("  %-12s %s %s %d B x %d on %d QPs: %.3f Gbit/s, verified %d, errors %d" % (
    sys.argv[1].rsplit("/", 1)[1][:-5], j["test"], j["mode"], j["size"], j["messages"],
    j["qps"], j["gbps"], j["verified"] + j.get("peer", {}).get("verified", 0), j["errors"]))
sys.exit(0 if eval(sys.argv[2]) else 1)
PY
}

