#!/bin/sh
# The compliance suite against metaroced over real UDP: the daemon in one network namespace,
# the suite's peer (compliance-agent-daemon, agents/daemon.c) in another, a veth between them
# for each of two planes.
#
#   tests/compliance/daemon.sh BUILD_DIR udp|xdp [--auth] RESULTS.json SCRIPT...
#   tests/compliance/daemon.sh BUILD_DIR udp|xdp --matrix RESULTS.json
#
# --auth: the daemon authenticates (auth = header under a cluster key, SPEC 14.6) and the
# agent is a member of its cluster; only the scripts that say setup auth=1 run on it, the
# others skip (the run without takes them).
#
# The second runs the scenario matrix (compliance-matrix) with the engine and the daemon, each
# as client and as server: the daemon's two QPs of a daemon-to-daemon pair belong to two
# agents, two nodes at two addresses (six of each for incast's three pairs). The xdp run
# skips, saying why, where the daemon cannot
# attach its program (it then says so in its log and runs udp: the backend it chose is read,
# not assumed). Exits as compliance does: 0 when nothing failed.
set -u
BUILD=${1:?usage: daemon.sh BUILD_DIR udp|xdp [--matrix|--auth] RESULTS.json [SCRIPT...]}
backend=${2:?}
shift 2
matrix= auth=
[ "${1:-}" != --matrix ] || { matrix=1; shift; }
[ "${1:-}" != --auth ] || { auth=1; shift; }
results=${1:?}
shift
. "$(dirname "$0")/../integration/lib.sh"

two_hosts
# more nodes' addresses, for the matrix's other agents (a client and a server for each of
# three QP pairs at once); fresh ones, a node each for the scripts that play discovery; a
# stranger's, outside the daemon's peer prefixes; and a neighbour's, inside them, no QP's peer
fresh=
nodes="198.18.0.2,198.19.0.2"
for k in 3 5 6 7 8; do
	nodes="$nodes;198.18.0.$k,198.19.0.$k"
done
for p in 0 1; do
	for k in 3 5 6 7 8; do
		ip -n "$NS_B" addr add "198.1$((8 + p)).0.$k/24" dev "${TAG}b$p"
	done
	for k in $(seq 10 21); do
		ip -n "$NS_B" addr add "198.1$((8 + p)).0.$k/24" dev "${TAG}b$p"
	done
done
for k in $(seq 10 21); do
	fresh="$fresh${fresh:+;}198.18.0.$k,198.19.0.$k"
done
ip -n "$NS_B" addr add 198.18.0.200/24 dev "${TAG}b0"
ip -n "$NS_B" addr add 198.18.0.4/24 dev "${TAG}b0"
# The suite's peer answers in milliseconds (a line of the agent protocol each way per step of a
# script), not in a fabric's microseconds: with the default 1 ms RTO before a first sample a
# path would fail before the script's first ACK. Scripts that time the RTO itself need a
# virtual clock and skip here.
if [ -n "$auth" ]; then # the cluster key start_daemon makes, and authentication on
	unset NO_CLUSTER_KEY
	auth_mode=header
else
	NO_CLUSTER_KEY=1
	auth_mode=off
fi
start_daemon "$NS_A" iut --set "plane=0 ${TAG}a0 198.18.0.1" \
	--set "plane=1 ${TAG}a1 198.19.0.1" --set "peer_prefix=198.18.0.0/25" \
	--set "peer_prefix=198.19.0.0/25" \
	--set "control_socket=$TMP/iut.sock" \
	--set "backend=$backend" --set "auth=$auth_mode" \
	--set "rto_initial=100ms" --set "rto_min=100ms" --set "rto_max=1s"
up_or_gone() { grep -q "$DAEMON_UP" "$TMP/iut.log" || gone "$PID_iut"; }
wait_until 10 "metaroced did not come up" up_or_gone
if ! grep -q "$DAEMON_UP" "$TMP/iut.log"; then
	cat "$TMP/iut.log"
	fail "metaroced did not start" # (where XDP cannot attach it starts on udp, read below)
fi
chosen=$(ctl_json "$TMP/iut.sock" status 'j["backend"]')
[ "$chosen" = "$backend" ] ||
	skip "metaroced-$backend: the daemon runs backend $chosen here: $(grep -m1 backend "$TMP/iut.log")"
name=metaroced-$backend${auth:+-auth}
agent="remote:$BUILD/tests/compliance/compliance-agent-daemon $name"
in_peer() {
	ip netns exec "$NS_B" env METAROCE_SOCKET="$TMP/iut.sock" METAROCE_QUIET=1 \
		COMPLIANCE_IUT_ADDR=198.18.0.1,198.19.0.1 \
		COMPLIANCE_PEER_ADDR="$nodes" \
		COMPLIANCE_FRESH_ADDR="$fresh" COMPLIANCE_STRANGER_ADDR=198.18.0.200 \
		COMPLIANCE_NEIGHBOUR_ADDR=198.18.0.4 \
		${auth:+COMPLIANCE_CLUSTER_KEY_FILE="$TMP/cluster.key"} \
		LD_LIBRARY_PATH="$BUILD/lib" "$@"
}
if [ -n "$matrix" ]; then
	in_peer "$BUILD/tests/compliance/compliance-matrix" "$results" engine "$agent"
else
	in_peer "$BUILD/tests/compliance/compliance" \
		--known "$(dirname "$0")/known/$name.txt" "$agent" "$results" "$@"
fi
