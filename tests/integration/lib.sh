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

# Two namespaces joined by one veth pair per plane.
two_hosts() {
	[ "$(id -u)" -eq 0 ] || skip "needs root for network namespaces"
	ip netns add "$NS_A" 2>/dev/null || skip "cannot create network namespaces here"
	ip netns add "$NS_B" || fail "second namespace"
	for p in 0 1; do
		ip link add "${TAG}a$p" netns "$NS_A" type veth peer "${TAG}b$p" netns "$NS_B" ||
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
# METAROCED names another build of it (make integration-asan)
start_daemon() {
	ns=$1 name=$2
	shift 2
	ip netns exec "$ns" "${METAROCED:-$BUILD/sbin/metaroced}" "$@" >"$TMP/$name.log" 2>&1 &
	PIDS="$PIDS $!"
	eval "PID_$name=$!"
}

# wait_for FILE PATTERN [SECONDS]
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
	start_daemon "$NS_A" a --set "plane=0 ${TAG}a0 198.18.0.1" \
		--set "plane=1 ${TAG}a1 198.19.0.1" --set "peer_prefix=198.18.0.0/15" \
		--set "control_socket=$TMP/a.sock" "$@"
	start_daemon "$NS_B" b --set "plane=0 ${TAG}b0 198.18.0.2" \
		--set "plane=1 ${TAG}b1 198.19.0.2" --set "peer_prefix=198.18.0.0/15" \
		--set "control_socket=$TMP/b.sock" "$@"
	wait_for "$TMP/a.log" "backend "
	wait_for "$TMP/b.log" "backend "
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

# ctl_json SOCKET ARGS... PYTHON: runs metaroce-ctl -j and hands its parsed output to a Python
# expression over `j` that must be true.
ctl_check() {
	sock=$1 what=$2 expr=$3
	"$BUILD/bin/metaroce-ctl" -S "$sock" -j $what | python3 -c "
import json, sys
j = json.load(sys.stdin)
ok = $expr
if not ok:
    print(json.dumps(j, indent=1))
sys.exit(0 if ok else 1)" || fail "metaroce-ctl $what: expected $expr"
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

