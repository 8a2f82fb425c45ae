# An off-path attacker (issue 20; cases listed in tests/integration/attack/README.md): on a
# third host of the testbed fabric, which sees none of the traffic between hosts 0 and 1, a
# forger sends raw datagrams with the source address of the victim's real peer
# (tests/integration/attack/forge -s), in a fabric without source address validation (the
# attacker's best case). Both daemons authenticate (SPEC 14.6).
#
#  1. Into a live verified transfer, both ways, every harmful kind forge knows (CLOSE, NAKs,
#     throttling and unsent ACKs, probe replies, WRITE, SEND, READ requests) to the QPs' real
#     numbers (leaked to it: its best case), and DISCOVERs rebinding the peer's address to a
#     new node id: every byte arrives, no QP fails, both daemons answer status within 1 s,
#     and their counts show the forgeries reached them and failed their tags.
#  2. A DISCOVER flood in host 0's name while host 0's daemon restarts: host 1 still learns
#     the restarted daemon (answered and believed only under its key), and a new transfer
#     runs; the flood cost host 0's real discovery nothing.
. "$(dirname "$0")/lib.sh"

command -v bpftool >/dev/null || fail "bpftool missing (make deps)"
ROUNDS=100
testbed_up --hosts 3 --planes 1 --spines 2
# no source address validation anywhere in the fabric (settings of its namespaces only)
for ns in $(ip netns list | awk -v p="^mtb-$TESTBED-" '$1 ~ p { print $1 }'); do
	ip netns exec "$ns" sh -c 'for f in /proc/sys/net/ipv4/conf/*/rp_filter; do echo 0 >"$f"; done'
done
testbed_daemons 1 0 1
wait_for "$TMP/h0.log" "$DAEMON_UP"
wait_for "$TMP/h1.log" "$DAEMON_UP"
grep -q "auth header" "$TMP/h0.log" || fail "host 0 does not authenticate"
ATTACKER="mtb-$TESTBED-h2"
port=$(ctl_json "$TMP/h1.sock" status 'j["port"]')

metric() { # SOCKET NAME: a sample's value, 0 when absent
	"$BUILD/bin/metaroce-ctl" -S "$1" metrics | awk -v m="$2" '$1 == m { v = $2 } END { print v + 0 }'
}
live_qps() { # SOCKET: the numbers of the daemon's QPs at RTR or RTS
	"$BUILD/bin/metaroce-ctl" -S "$1" qp | awk '$1 == "qp" && ($3 == "rtr" || $3 == "rts") { print $2 }'
}
two_live_qps() { [ "$(live_qps "$1" | wc -l)" -eq 2 ]; }
UNAUTH='metaroce_qp_rx_dropped_total{reason="unauthenticated"}'
DISC_UNAUTH='metaroce_discovery_refused_total{reason="unauthenticated"}'

# spoof VICTIM_SOCKET VICTIM_ADDR PEER_ADDR OUT: once the victim has the transfer's QPs, the
# forger on the third host sends them everything, as PEER_ADDR
spoof() {
	wait_until 30 "the transfer's QPs on $1" two_live_qps "$1"
	qpns=$(live_qps "$1")
	# shellcheck disable=SC2086
	# 100 rounds 20 ms apart: spread over the 8 s transfer, not a burst at its start
	ip netns exec "$ATTACKER" "$BUILD/tests/integration/attack/forge" -s "$3" -w 20000 "$2" \
		"$port" 30 "$ROUNDS" $qpns >"$4" 2>&1 || return 1
	[ "$(live_qps "$1")" = "$qpns" ] || { echo "the QPs ended before the forger did" >>"$4"; return 1; }
}

# --- 1. forgeries into a live transfer, both ways ---------------------------------------------
u0=$(metric "$TMP/h0.sock" "$UNAUTH") u1=$(metric "$TMP/h1.sock" "$UNAUTH")
d1=$(metric "$TMP/h1.sock" "$DISC_UNAUTH")
ip netns exec "mtb-$TESTBED-h1" env METAROCE_SOCKET="$TMP/h1.sock" "$BUILD/bin/metaroce-run" \
	timeout 120 "$BUILD/bin/metaroce-perf" -e >"$TMP/srv.log" 2>&1 &
srv=$!
PIDS="$PIDS $srv"
spoof "$TMP/h1.sock" 198.18.1.2 198.18.0.2 "$TMP/forge1.out" &
f1=$!
spoof "$TMP/h0.sock" 198.18.0.2 198.18.1.2 "$TMP/forge0.out" &
f0=$!
ip netns exec "mtb-$TESTBED-h0" env METAROCE_SOCKET="$TMP/h0.sock" "$BUILD/bin/metaroce-run" \
	timeout 120 "$BUILD/bin/metaroce-perf" -j -t write -s 65536 -q 2 -Q 8 -D 8 -V -e 198.18.1.2 \
	>"$TMP/spoofed.json" 2>"$TMP/spoofed.err" &
cli=$!
PIDS="$PIDS $f0 $f1 $cli"
# both control sockets probed for as long as the transfer runs
status_probe "$TMP/h0.sock" "$cli" "$TMP/probe0.out"
p0=$PROBE
status_probe "$TMP/h1.sock" "$cli" "$TMP/probe1.out"
p1=$PROBE
wait "$cli" || { cat "$TMP/spoofed.err" "$TMP/srv.log"; fail "the transfer under spoofed forgeries"; }
wait "$srv" || { cat "$TMP/srv.log"; fail "the transfer's server"; }
wait "$f1" || { cat "$TMP/forge1.out"; fail "the forger against host 1"; }
wait "$f0" || { cat "$TMP/forge0.out"; fail "the forger against host 0"; }
wait "$p0" || { cat "$TMP/probe0.out"; fail "host 0's control socket under forgeries"; }
wait "$p1" || { cat "$TMP/probe1.out"; fail "host 1's control socket under forgeries"; }
json_check spoofed 'j["messages"] > 0 and j["peer"]["verified"] == j["messages"] and j["errors"] == 0 and j["peer"]["errors"] == 0'
! grep -q "restarted: node" "$TMP/h0.log" "$TMP/h1.log" || fail "a spoofed DISCOVER passed for a restart"
echo "into host 1's QPs, as host 0: $(cat "$TMP/forge1.out")"
echo "into host 0's QPs, as host 1: $(cat "$TMP/forge0.out")"
echo "host 0 $(cat "$TMP/probe0.out"); host 1 $(cat "$TMP/probe1.out")"
# ten kinds of eleven go to QPs: half of them at least reached them and failed their tags
refused_since() { # HOST BEFORE
	n=$(($(metric "$TMP/h$1.sock" "$UNAUTH") - $2))
	echo "host $1 refused $n spoofed packets as unauthenticated"
	[ "$n" -ge $((10 * 2 * ROUNDS / 2)) ] ||
		fail "host $1 refused only $n spoofed packets (the spoofs did not reach it?)"
}
refused_since 0 "$u0"
refused_since 1 "$u1"
n=$(($(metric "$TMP/h1.sock" "$DISC_UNAUTH") - d1))
[ "$n" -ge "$ROUNDS" ] || fail "host 1 refused only $n spoofed DISCOVERs"
echo "host 1 refused $n spoofed DISCOVERs rebinding host 0's address"

# --- 2. a DISCOVER flood in host 0's name while host 0's daemon restarts -----------------------
ctl_wait 10 "$TMP/h1.sock" qp "len(j['qps']) == 0"
d1=$(metric "$TMP/h1.sock" "$DISC_UNAUTH")
# (for up to 300 s: it is stopped once the transfer after the restart is over)
ip netns exec "$ATTACKER" "$BUILD/tests/integration/attack/forge" -s 198.18.0.2 -k discover \
	198.18.1.2 "$port" 300 10000000 0 >"$TMP/flood.out" 2>&1 &
flood=$!
PIDS="$PIDS $flood"
# the flood under way before host 0 comes back
flooding() { [ "$(metric "$TMP/h1.sock" "$DISC_UNAUTH")" -gt $((d1 + 100)) ]; }
wait_until 10 "the DISCOVER flood never reached host 1" flooding
old_node=$(ctl_json "$TMP/h0.sock" status 'j["node"]')
kill "$PID_h0"
wait_until 10 "host 0's daemon did not stop" gone "$PID_h0"
mv "$TMP/h0.log" "$TMP/h0.first.log"
set -- --set "peer_prefix=198.18.0.0/16" --set "control_socket=$TMP/h0.sock" \
	--set "backend=${BACKEND:-auto}" --set "plane=0 p0 198.18.0.2"
start_daemon "mtb-$TESTBED-h0" h0 "$@"
wait_for "$TMP/h0.log" "$DAEMON_UP"
new_node=$(ctl_json "$TMP/h0.sock" status 'j["node"]')
[ "$new_node" != "$old_node" ] || fail "host 0 came back with its old node id"
status_probe "$TMP/h1.sock" "$flood" "$TMP/probe_flood.out"
pf=$PROBE
ip netns exec "mtb-$TESTBED-h1" env METAROCE_SOCKET="$TMP/h1.sock" "$BUILD/bin/metaroce-run" \
	timeout 120 "$BUILD/bin/metaroce-perf" -e >"$TMP/srv2.log" 2>&1 &
srv=$!
PIDS="$PIDS $srv"
ip netns exec "mtb-$TESTBED-h0" env METAROCE_SOCKET="$TMP/h0.sock" "$BUILD/bin/metaroce-run" \
	timeout 120 "$BUILD/bin/metaroce-perf" -j -t write -s 65536 -q 2 -n 200 -V -e 198.18.1.2 \
	>"$TMP/flooded.json" 2>"$TMP/flooded.err" || { cat "$TMP/flooded.err"; tail -n 20 "$TMP/h1.log"; fail "the transfer under the DISCOVER flood"; }
wait "$srv" || { cat "$TMP/srv2.log"; fail "the flooded transfer's server"; }
json_check flooded 'j["messages"] == 400 and j["peer"]["verified"] == 400 and j["errors"] == 0'
# host 1 knows the restarted daemon by its new node id, learnt while the flood went on
kill -0 "$flood" || fail "the flood ended before the transfer did: it proved nothing"
ctl_json "$TMP/h1.sock" peer '[p["node"] for p in j["peers"]]' | grep -qx "$new_node" ||
	fail "host 1 does not know host 0's new node id $new_node"
kill "$flood"
wait "$pf" || { cat "$TMP/probe_flood.out"; fail "host 1's control socket under the DISCOVER flood"; }
n=$(($(metric "$TMP/h1.sock" "$DISC_UNAUTH") - d1))
echo "DISCOVER flood as host 0: host 1 refused $n, learnt host 0's restart ($old_node -> $new_node), $(cat "$TMP/probe_flood.out")"
kill -0 "$PID_h1" || fail "host 1's daemon died"
