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

cleanup() {
	for p in $PIDS; do kill -KILL "$p" 2>/dev/null; done
	ip netns del "$NS_A" 2>/dev/null
	ip netns del "$NS_B" 2>/dev/null
	rm -rf "$TMP"
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

# start_daemon NS NAME ARGS...: metaroced in a namespace, its log in $TMP/NAME.log
start_daemon() {
	ns=$1 name=$2
	shift 2
	ip netns exec "$ns" "$BUILD/sbin/metaroced" "$@" >"$TMP/$name.log" 2>&1 &
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
