# metaroce-ctl as operators use it: the grammar (prefixes, help at every level, exit codes
# 0/1/2), -j and -j -p parsed back, dev show; the maintenance action: draining a plane in
# the middle of a verified transfer moves every new packet to the other plane, on both
# hosts (the peer follows the announcement), with no error and no byte lost; restoring it
# brings it back; monitor streams all of it as it happens (text and -j); config reload;
# another user sees only their own QPs, paths and holdings against the user limits, no node
# ids, and may not act or monitor.
. "$(dirname "$0")/lib.sh"

two_daemons
CTL="$BUILD/bin/metaroce-ctl"
A="-S $TMP/a.sock"

# grammar
"$CTL" help | grep -q "path set plane N down|up" || fail "help lacks the drain action"
"$CTL" path help | grep -q "^  path set" || fail "path help"
# shellcheck disable=SC2086
"$CTL" $A statu >/dev/null || fail "'statu' is a prefix of status"
# shellcheck disable=SC2086
"$CTL" $A st 2>/dev/null; [ $? -eq 2 ] || fail "'st' (status or stat) was not ambiguous"
# config show reads back: the daemon started from it takes the same settings
# shellcheck disable=SC2086
"$CTL" $A config show >"$TMP/shown.conf" || fail "config show"
grep -q "^plane = 1 ${TAG}a1 198.19.0.1$" "$TMP/shown.conf" || fail "config show lacks plane 1"
sed -i "s|^control_socket = .*|control_socket = $TMP/c.sock|" "$TMP/shown.conf"
ip netns exec "$NS_A" "$BUILD/sbin/metaroced" -c "$TMP/shown.conf" --set port=4800 >"$TMP/c.log" 2>&1 &
cdaemon=$!
PIDS="$PIDS $cdaemon"
wait_for "$TMP/c.log" "$DAEMON_UP"
"$CTL" -S "$TMP/c.sock" config show | grep -v '^control_socket\|^port' >"$TMP/shown2.conf" ||
	{ cat "$TMP/c.log" "$TMP/shown.conf"; fail "config show of a daemon started from config show"; }
grep -v '^control_socket\|^port' "$TMP/shown.conf" | diff - "$TMP/shown2.conf" ||
	fail "config show does not read back to the same settings"
kill "$cdaemon"
wait "$cdaemon"
# xdp show says of both planes what -j xdp reports: the mode the kernel gave the program (native
# on veth where the driver has it, generic where not), or no program if auto took udp
xdp_of "$TMP/a.sock" 0
xdp_of "$TMP/a.sock" 1
echo "xdp show: plane 1 $XDP_MODE, $XDP_ATTACH"
# shellcheck disable=SC2086
"$CTL" $A p 2>"$TMP/err.txt"; [ $? -eq 2 ] || fail "ambiguous 'p' did not exit 2"
grep -q "ambiguous: peer or path" "$TMP/err.txt" || fail "ambiguity not explained"
# shellcheck disable=SC2086
"$CTL" $A frob 2>/dev/null; [ $? -eq 2 ] || fail "unknown object did not exit 2"
# shellcheck disable=SC2086
"$CTL" $A path set plane 99 down 2>/dev/null; [ $? -eq 2 ] || fail "plane 99 did not exit 2"
"$CTL" -S "$TMP/none.sock" status 2>/dev/null; [ $? -eq 1 ] || fail "no daemon did not exit 1"
# shellcheck disable=SC2086
"$CTL" $A -j -p dev show | python3 -c '
import json, sys
j = json.load(sys.stdin)
assert j["dev"] == "metaroce0" and j["link_layer"] == "ethernet", j
assert [g["gid"] for g in j["gids"]] == ["::ffff:198.18.0.1", "::ffff:198.19.0.1"], j' ||
	fail "dev show -j -p"

# a monitor watches everything below
"$CTL" -S "$TMP/a.sock" monitor >"$TMP/events.txt" 2>&1 &
mon=$!
PIDS="$PIDS $mon"
"$CTL" -S "$TMP/a.sock" -j monitor >"$TMP/events.json" 2>&1 &
monj=$!
PIDS="$PIDS $monj"
# both stream once they see an event: a counter reset (harmless before any traffic) until they do
monitors_listen() {
	"$CTL" -S "$TMP/a.sock" stat reset >/dev/null &&
		grep -q "counters reset by an operator" "$TMP/events.txt" &&
		grep -q "counters reset by an operator" "$TMP/events.json"
}
wait_until 5 "the monitors saw no event" monitors_listen

# drain plane 1 in the middle of a verified transfer (100 rounds: 7 s on a fast run, 18 on a
# slow one; the drain and restore are seen within 4)
bg_b "$TMP/d.server.log" timeout 120 "$BUILD/tests/verbs/verbs_check" -n 100 -s 65537,4M
srv=$BG
# (no wait for the server: verbs_check's client retries its connection)
bg_a "$TMP/d.client.log" timeout 120 "$BUILD/tests/verbs/verbs_check" -n 100 -s 65537,4M 198.18.0.2
cli=$BG
transfer_ended() { # WHAT: the transfer is over before WHAT could be seen; say how it ended
	wait "$cli"
	echo "--- client (exit $?):"
	cat "$TMP/d.client.log"
	echo "--- server:"
	cat "$TMP/d.server.log"
	tail -n 20 "$TMP/a.log" "$TMP/b.log"
	fail "the transfer ended before the $1 could be observed"
}
plane_tx() { # SOCKET PLANE: packets sent so far on that plane's paths
	ctl_json "$1" path "sum(p['tx_packets'] for p in j['paths'] if p['plane'] == $2)"
}
tx_above() { # SOCKET PLANE N: more than N packets sent on that plane
	[ "$(plane_tx "$1" "$2")" -gt "$3" ]
}
all_drained() { # SOCKET: the QP's paths on plane 1 are all drained
	ctl_true "$1" path "{p['state'] for p in j['paths'] if p['plane'] == 1} == {'drained'}"
}
# What is waited on below holds once the transfer is over, too, which the check after each wait
# tells apart (dash reaps an ended child at its next command, and then kill -0 fails).
running_on_plane_1() { gone "$cli" || tx_above "$TMP/a.sock" 1 0; }
drained_on() { gone "$cli" || all_drained "$1"; }
busy_on_plane_0() { gone "$cli" || { tx_above "$TMP/a.sock" 0 $((a0 + 5000)) && tx_above "$TMP/b.sock" 0 $((b0 + 500)); }; }
back_on_plane_1() { gone "$cli" || tx_above "$TMP/a.sock" 1 "$a2"; }
wait_until 10 "the transfer never sent on plane 1" running_on_plane_1
gone "$cli" && transfer_ended "traffic on plane 1"
# shellcheck disable=SC2086
"$CTL" $A path set plane 1 down | grep -q "plane drained" || fail "path set plane 1 down"
# A's paths on plane 1 drained, and B's once the announcement reached it
wait_until 5 "A's paths on plane 1 not all drained" drained_on "$TMP/a.sock"
wait_until 5 "B did not follow A's drain of plane 1" drained_on "$TMP/b.sock"
a1=$(plane_tx "$TMP/a.sock" 1)
b1=$(plane_tx "$TMP/b.sock" 1)
a0=$(plane_tx "$TMP/a.sock" 0)
b0=$(plane_tx "$TMP/b.sock" 0)
# while both send a good deal more on plane 0, neither sends anything on plane 1
wait_until 10 "little traffic on plane 0 after the drain" busy_on_plane_0
a2=$(plane_tx "$TMP/a.sock" 1)
b2=$(plane_tx "$TMP/b.sock" 1)
gone "$cli" && transfer_ended "drain"
[ "$a1" -gt 0 ] || fail "plane 1 carried nothing before the drain"
[ "$a1" -eq "$a2" ] || fail "A still sends on drained plane 1 ($a1 -> $a2)"
[ "$b1" -eq "$b2" ] || fail "B did not follow A's drain of plane 1 ($b1 -> $b2)"
[ "$a0" -gt 0 ] || fail "nothing on plane 0 either"
"$CTL" -S "$TMP/a.sock" -s path show | grep -q "plane 1 .*drained" || fail "path show: not drained"
# shellcheck disable=SC2086
"$CTL" $A -j status | grep -q '"drained_planes":2' || fail "status does not show plane 1 drained"
# another user, in the socket's group as a deployment puts its users, sees the daemon but
# none of root's QPs or paths, no node id, and may neither act nor monitor
chmod o+x "$TMP"
chgrp nogroup "$TMP/a.sock"
as_nobody() { setpriv --reuid=nobody --regid=nogroup --clear-groups "$CTL" -S "$TMP/a.sock" "$@"; }
as_nobody status >/dev/null || fail "another user cannot ask the status"
# ... and in it only its own holdings, against the user limits (its own connection: 1 of 64)
as_nobody -j status | python3 -c '
import json, sys
u = json.load(sys.stdin)["users"]
sys.exit(0 if [(x["uid"], x["limited"], x["connections"]) for x in u] == [(65534, True, [1, 64])] else 1)' ||
	fail "another user's status: $(as_nobody status)"
"$CTL" -S "$TMP/a.sock" status | grep -q "^user 0  (not limited)  connections" ||
	fail "root's status lacks root's holdings: $("$CTL" -S "$TMP/a.sock" status)"
[ "$(ctl_json "$TMP/a.sock" qp 'len(j["qps"])')" -ge 1 ] || transfer_ended "other users' view"
as_nobody -j qp | grep -qx '{"qps":\[\]}' || fail "another user sees root's QPs: $(as_nobody -j qp)"
as_nobody -j path | grep -qx '{"paths":\[\]}' || fail "another user sees root's paths"
as_nobody -j peer | python3 -c '
import json, sys
sys.exit(0 if all(p["node"] == "0" * 16 for p in json.load(sys.stdin)["peers"]) else 1)' ||
	fail "another user sees the peers' node ids"
as_nobody path set plane 1 up 2>/dev/null && fail "another user restored a plane"
as_nobody monitor 2>/dev/null && fail "another user may monitor"
# shellcheck disable=SC2086
"$CTL" $A path set plane 1 up | grep -q "plane restored" || fail "path set plane 1 up"
wait_until 5 "plane 1 not used again after restore" back_on_plane_1
a3=$(plane_tx "$TMP/a.sock" 1)
[ "$a3" -gt "$a2" ] || transfer_ended "restore"
# metric_sum NAME: the sum of an exported family's samples
metric_sum() {
	# shellcheck disable=SC2086
	"$CTL" $A metrics | awk -v n="$1" '$1 == n || index($1, n "{") == 1 {s += $2} END {print s + 0}'
}
# stat reset starts what the control replies show (the live QP's per-path counters too) from
# zero; the exported counters go on and never fall, not at the reset nor when the QP goes.
# The client is held meanwhile (SIGSTOP), so its QP is there to be seen however fast it ran:
# its whole process group, which timeout(1) leads (verbs_check is timeout's child)
kill -STOP -"$cli" 2>/dev/null || transfer_ended "reset"
before=$(( $(plane_tx "$TMP/a.sock" 0) + $(plane_tx "$TMP/a.sock" 1) ))
exported=$(metric_sum metaroce_path_tx_packets_total)
# shellcheck disable=SC2086
"$CTL" $A stat reset | grep -q "counters reset" || fail "stat reset"
after=$(( $(plane_tx "$TMP/a.sock" 0) + $(plane_tx "$TMP/a.sock" 1) ))
[ "$after" -lt "$before" ] || fail "stat reset left the path counters ($before -> $after)"
[ "$(metric_sum metaroce_path_tx_packets_total)" -ge "$exported" ] ||
	fail "stat reset took the exported path counter back"
kill -CONT -"$cli"
wait "$cli" || { cat "$TMP/d.client.log"; fail "the transfer across the drain failed"; }
wait "$srv" || { cat "$TMP/d.server.log"; fail "its server failed"; }
exported_end=$(metric_sum metaroce_path_tx_packets_total)
[ "$exported_end" -gt "$exported" ] ||
	fail "the exported path counter fell when the QP went ($exported -> $exported_end)"
[ "$(metric_sum metaroce_completions_total)" -gt 0 ] ||
	fail "the completions of a QP that is gone left the exported total"
grep "verbs_check: OK" "$TMP/d.client.log"
grep -q "plane 1 drained by an operator" "$TMP/a.log" || fail "no log of the drain"

# the monitors saw the client arrive and leave (the last event), the drain, the paths follow
# it, and back: after the drain plane 1's paths turn drained, after the restore one comes up
# (from whatever state each 100 ms report found: up, or failed on a loaded machine whose
# probes time out, before the drain; drained, or failed through a first probe, after)
wait_for "$TMP/events.txt" "client pid [0-9]* gone"
wait_for "$TMP/events.json" "client pid [0-9]* gone"
kill "$mon" "$monj"
for e in "client pid [0-9]* uid 0 connected" "plane 1 drained by an operator" \
	"plane 1 restored by an operator" \
	"client pid [0-9]* gone"; do
	grep -q "$e" "$TMP/events.txt" || { cat "$TMP/events.txt"; fail "monitor missed: $e"; }
done
sed -n '/plane 1 drained by an operator/,/plane 1 restored by an operator/p' "$TMP/events.txt" |
	grep -q "path [0-9]* plane 1 sport [0-9]*: [a-z]* -> drained" ||
	{ cat "$TMP/events.txt"; fail "monitor missed: plane 1's paths drained"; }
sed -n '/plane 1 restored by an operator/,$p' "$TMP/events.txt" |
	grep -q "path [0-9]* plane 1 sport [0-9]*: [a-z]* -> up" ||
	{ cat "$TMP/events.txt"; fail "monitor missed: a path of plane 1 up after the restore"; }
python3 -c '
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
assert lines and all(set(l) == {"event"} for l in lines), lines[:3]
assert any("drained by an operator" in l["event"] for l in lines)' "$TMP/events.json" ||
	fail "monitor -j"

# shellcheck disable=SC2086
"$CTL" $A stat reset | grep -q "counters reset" || fail "stat reset"
# shellcheck disable=SC2086
"$CTL" $A -j stat | python3 -c '
import json, sys
j = json.load(sys.stdin)
assert j["tx_datagrams"] < 1000, j' || fail "counters not reset"

# config reload through the socket: no file here, so nothing to do, said so
# shellcheck disable=SC2086
"$CTL" $A config reload | grep -q "configuration reloaded" || fail "config reload"
echo PASS
