#!/bin/sh
# The compliance suite against metaroced over real UDP: the daemon in one network namespace,
# the suite's peer (compliance-agent-daemon, agents/daemon.c) in another, one veth between.
#
#   tests/compliance/daemon.sh BUILD_DIR udp|xdp RESULTS.json SCRIPT...
#
# The xdp run skips, saying why, where the daemon cannot attach its program (it then says so
# in its log and runs udp: the backend it chose is read, not assumed). Exits as compliance
# does: 0 when no script failed.
set -u
BUILD=${1:?usage: daemon.sh BUILD_DIR udp|xdp RESULTS.json SCRIPT...}
backend=${2:?} results=${3:?}
shift 3
. "$(dirname "$0")/../integration/lib.sh"

two_hosts
# The suite's peer answers in milliseconds (a line of the agent protocol each way per step of a
# script), not in a fabric's microseconds: with the default 1 ms RTO before a first sample a
# path would fail before the script's first ACK. Scripts that time the RTO itself need a
# virtual clock and skip here.
NO_CLUSTER_KEY=1 start_daemon "$NS_A" iut --set "plane=0 ${TAG}a0 198.18.0.1" \
	--set "peer_prefix=198.18.0.0/15" --set "control_socket=$TMP/iut.sock" \
	--set "backend=$backend" --set "auth=off" \
	--set "rto_initial=100ms" --set "rto_min=100ms" --set "rto_max=1s"
up_or_gone() { grep -q "$DAEMON_UP" "$TMP/iut.log" || gone "$PID_iut"; }
wait_until 10 "metaroced did not come up" up_or_gone
if ! grep -q "$DAEMON_UP" "$TMP/iut.log"; then
	# a backend the kernel cannot give is a skip, with the daemon's reason; anything else fails
	[ "$backend" = xdp ] && skip "metaroced-xdp: the daemon did not start: $(tail -n 1 "$TMP/iut.log")"
	cat "$TMP/iut.log"
	fail "metaroced did not start"
fi
chosen=$(ctl_json "$TMP/iut.sock" status 'j["backend"]')
[ "$chosen" = "$backend" ] ||
	skip "metaroced-$backend: the daemon runs backend $chosen here: $(grep -m1 backend "$TMP/iut.log")"
ip netns exec "$NS_B" env METAROCE_SOCKET="$TMP/iut.sock" METAROCE_QUIET=1 \
	COMPLIANCE_IUT_ADDR=198.18.0.1 COMPLIANCE_PEER_ADDR=198.18.0.2 \
	LD_LIBRARY_PATH="$BUILD/lib" "$BUILD/tests/compliance/compliance" \
	--known "$(dirname "$0")/known/metaroced-$backend.txt" \
	"remote:$BUILD/tests/compliance/compliance-agent-daemon metaroced-$backend" "$results" "$@"
