# The xdp backend end to end: the XDP program attached to both planes of two daemons in
# network namespaces places WRITE and READ response payloads itself and hands the rest to
# AF_XDP sockets, through which the daemons also send; unmodified
# ibv_rc_pingpong and metaroce-perf, verified byte for byte, run over it; the program's
# counters and the kernel's UDP counters prove the data packets were placed in XDP and never
# reached a socket. Then: no program left behind after a clean stop, one left by a killed
# daemon is replaced by the next, and backend = udp attaches nothing.
. "$(dirname "$0")/lib.sh"

command -v ibv_rc_pingpong >/dev/null || fail "ibv_rc_pingpong missing (ibverbs-utils: make deps)"
CTL=$BUILD/bin/metaroce-ctl
two_daemons --set backend=xdp
grep -q "backend xdp (${TAG}a0 native, ${TAG}a1 native)" "$TMP/a.log" ||
	fail "not attached in driver mode: $(head -n 3 "$TMP/a.log")"

# UDP datagrams the kernel delivered to sockets in B, and what the program did there
udp_in() { ip netns exec "$NS_B" cat /proc/net/snmp | awk '/^Udp: [0-9]/ { print $2 }'; }
placed() { "$CTL" -S "$TMP/b.sock" -j xdp | python3 -c 'import json,sys; print(json.load(sys.stdin)["packets"]["'"$1"'"])'; }

# unmodified ibv_rc_pingpong (SENDs: the daemon's to place) works with the program in front
bg_b "$TMP/pp.server.log" timeout 60 ibv_rc_pingpong -g 0 -s 65536 -n 100
srv=$BG
sleep 0.3
on_a timeout 60 ibv_rc_pingpong -g 0 -s 65536 -n 100 198.18.0.2 >"$TMP/pp.client.log" 2>&1 ||
	{ cat "$TMP/pp.client.log" "$TMP/pp.server.log"; fail "ibv_rc_pingpong client"; }
wait "$srv" || { cat "$TMP/pp.server.log"; fail "ibv_rc_pingpong server"; }
grep -q "13107200 bytes in" "$TMP/pp.client.log" || fail "ibv_rc_pingpong: no transfer line"

# WRITEs into B, every byte checked there: 300 x 100000 B is at least 21,200 data packets of
# at most 1416 B; nearly all must be placed in XDP, and far fewer datagrams reach B's sockets
udp0=$(udp_in)
placed0=$(placed placed)
perf_pair write_xdp -- -t write -s 100000 -q 2 -Q 4 -n 150 -V
json_check write_xdp 'j["messages"] == 300 and j["peer"]["verified"] == 300 and j["errors"] == 0 and j["peer"]["errors"] == 0'
udp1=$(udp_in)
placed1=$(placed placed)
echo "  WRITE 30 MB into B: $((placed1 - placed0)) packets placed in XDP, $((udp1 - udp0)) datagrams to B's sockets"
[ $((placed1 - placed0)) -ge 20000 ] || fail "only $((placed1 - placed0)) packets placed in XDP"
[ $((udp1 - udp0)) -lt $(((placed1 - placed0) / 4)) ] ||
	fail "$((udp1 - udp0)) datagrams reached B's sockets: data was passed up"
[ "$(placed bad_checksum)" -eq 0 ] || fail "checksum failures on a clean link"
# the rest (ACKs, discovery) went both ways through the AF_XDP sockets
xsk() { "$CTL" -S "$TMP/$1.sock" -j xdp | python3 -c 'import json,sys; print(json.load(sys.stdin)["af_xdp"]["'"$2"'"])'; }
[ "$(xsk b sockets)" -eq 2 ] || fail "$(xsk b sockets) AF_XDP sockets on B, 2 expected"
[ "$(xsk b rx)" -gt 0 ] && [ "$(xsk b tx)" -gt 1000 ] && [ "$(xsk a tx)" -gt 20000 ] ||
	fail "AF_XDP: B rx $(xsk b rx) tx $(xsk b tx), A tx $(xsk a tx)"

# a next hop the kernel forgot is resolved again, never guessed: meanwhile the UDP socket
# sends (which makes the kernel resolve it), and nothing is lost
unresolved0=$(xsk a tx_unresolved)
ip -n "$NS_A" neigh flush dev "${TAG}a0"
ip -n "$NS_A" neigh flush dev "${TAG}a1"
sleep 1.1 # past the daemon's one-second recheck
perf_pair write_relearn -- -t write -s 65536 -q 1 -n 100 -V
json_check write_relearn 'j["messages"] == 100 and j["peer"]["verified"] == 100'
[ "$(xsk a tx_unresolved)" -gt "$unresolved0" ] ||
	fail "no datagram waited for a flushed neighbour to be resolved"
ip -n "$NS_A" neigh show dev "${TAG}a0" | grep -q 198.18.0.2 || fail "neighbour not resolved again"

# READ responses into A's sinks (A's program places them), verified on A
perf_pair read_xdp -- -t read -s 100000 -q 2 -n 100 -V
json_check read_xdp 'j["messages"] == 200 and j["verified"] == 200 and j["errors"] == 0'
"$CTL" -S "$TMP/a.sock" -j xdp | python3 -c '
import json, sys
p = json.load(sys.stdin)["packets"]
print("  READ responses into A: %d placed in XDP" % p["placed"])
sys.exit(0 if p["placed"] >= 14000 else 1)' || fail "READ responses were not placed in XDP"
"$CTL" -S "$TMP/b.sock" xdp

# a clean stop detaches the program; a killed daemon's program is replaced by the next one's
kill -TERM "$PID_a"
wait "$PID_a" || fail "daemon a did not stop cleanly (exit $?)"
ip -n "$NS_A" link show | grep -q "prog/xdp" && fail "XDP program left attached after SIGTERM"
kill -KILL "$PID_b"
wait "$PID_b" 2>/dev/null
ip -n "$NS_B" link show | grep -q "prog/xdp" || fail "a killed daemon's program should still be attached"
start_daemon "$NS_B" b2 --set "plane=0 ${TAG}b0 198.18.0.2" --set "plane=1 ${TAG}b1 198.19.0.2" \
	--set "control_socket=$TMP/b2.sock" --set backend=xdp
wait_for "$TMP/b2.log" "backend xdp"
grep -q "detaching a metaroce XDP program left behind" "$TMP/b2.log" ||
	fail "the leftover program was not replaced"
[ "$(ip -n "$NS_B" link show | grep -c "prog/xdp")" -eq 2 ] || fail "not one program per plane"
kill -TERM "$PID_b2"
wait "$PID_b2" || fail "daemon b2 did not stop cleanly (exit $?)"

# backend = udp attaches nothing, and says so
start_daemon "$NS_A" a2 --set "plane=0 ${TAG}a0 198.18.0.1" --set "control_socket=$TMP/a2.sock" \
	--set backend=udp
wait_for "$TMP/a2.log" "backend udp, port"
"$CTL" -S "$TMP/a2.sock" xdp | grep -q "no XDP program: backend udp" || fail "xdp show on udp"
ip -n "$NS_A" link show | grep -q "prog/xdp" && fail "backend udp attached XDP"
echo "xdp backend: ok"
