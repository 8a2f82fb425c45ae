# Two metaroced, one per namespace, over two planes: A names one address of B and learns
# both of B's planes (SPEC 12.2), B learns A's from the DISCOVER; metaroce-ctl shows it, in
# text and JSON; a malformed control request closes only that client; a second daemon on a
# live control socket is refused; a bad reload keeps the running configuration; SIGTERM
# stops both cleanly and removes their sockets; usage errors exit 2 with a reason.
. "$(dirname "$0")/lib.sh"

two_hosts
cat >"$TMP/b.conf" <<EOF
plane = 0 ${TAG}b0 198.18.0.2
plane = 1 ${TAG}b1 198.19.0.2
peer_prefix = 198.18.0.0/15
control_socket = $TMP/b.sock
EOF

start_daemon "$NS_B" b -c "$TMP/b.conf"
wait_for "$TMP/b.log" "backend .*, port 4792, 2 planes"
# the backend and XDP modes the kernel allowed (auto: xdp, native on veth, where it can), as the
# daemon reports them, are what its log line says
grep -qF ": $(backend_of "$TMP/b.sock"), port 4792, 2 planes" "$TMP/b.log" ||
	fail "b's log does not say '$(backend_of "$TMP/b.sock")': $(grep "backend " "$TMP/b.log")"
# shellcheck disable=SC2086
start_daemon "$NS_A" a --set "plane=0 ${TAG}a0 198.18.0.1" --set "plane=1 ${TAG}a1 198.19.0.1" \
	--set "control_socket=$TMP/a.sock" --discover 198.18.0.2
wait_for "$TMP/a.log" "peer 198.18.0.2 discovered: node [0-9a-f]*, port 4792, planes 0=198.18.0.2 1=198.19.0.2"
wait_for "$TMP/b.log" "peer 198.18.0.1 discovered: node [0-9a-f]*, port 4792, planes 0=198.18.0.1 1=198.19.0.1"

# metaroce-ctl, text and JSON (parsed back); the socket is mode 0660.
CTL="$BUILD/bin/metaroce-ctl"
"$CTL" -S "$TMP/a.sock" status >"$TMP/status.txt" || fail "ctl status"
backend=$(backend_of "$TMP/a.sock")
grep -q "^node [0-9a-f]\{16\}  backend " "$TMP/status.txt" &&
	grep -qF "  $backend  port 4792" "$TMP/status.txt" &&
	grep -qF ": $backend, port 4792, 2 planes" "$TMP/a.log" ||
	fail "status text and log do not say '$backend': $(cat "$TMP/status.txt"; grep "backend " "$TMP/a.log")"
echo "a: $backend"
grep -q "^plane 1  ${TAG}a1 *198.19.0.1$" "$TMP/status.txt" || fail "status planes"
"$CTL" -S "$TMP/a.sock" peer show >"$TMP/peers.txt" || fail "ctl peer show"
grep -q "^peer 198.18.0.2  known  node [0-9a-f]*  port 4792$" "$TMP/peers.txt" || fail "peers"
grep -q "^  plane 1  198.19.0.2$" "$TMP/peers.txt" || fail "peer planes"
"$CTL" -S "$TMP/a.sock" -j status | python3 -c '
import json, sys
s = json.load(sys.stdin)
assert s["backend"] == sys.argv[1].split()[1] and s["port"] == 4792 and s["peers"] == 1, s
assert [p["address"] for p in s["planes"]] == ["198.18.0.1", "198.19.0.1"], s' "$backend" ||
	fail "status JSON"
"$CTL" -S "$TMP/a.sock" -j peer | python3 -c '
import json, sys
p = json.load(sys.stdin)["peers"]
assert len(p) == 1 and p[0]["state"] == "known", p
assert [x["address"] for x in p[0]["planes"]] == ["198.18.0.2", "198.19.0.2"], p' ||
	fail "peers JSON"
[ "$(stat -c %a "$TMP/a.sock")" = 660 ] || fail "control socket mode"
"$CTL" -S "$TMP/nothing.sock" status 2>"$TMP/err.log"
[ $? -eq 1 ] || fail "ctl to no daemon did not exit 1"
grep -q "cannot reach metaroced at $TMP/nothing.sock: No such file or directory (is it running?)" \
	"$TMP/err.log" || fail "ctl unreachable message"
"$CTL" -S "$TMP/a.sock" frobnicate 2>/dev/null
[ $? -eq 2 ] || fail "unknown ctl command did not exit 2"

# A hostile client: garbage on the control socket closes that client; the daemon carries on.
python3 - "$TMP/a.sock" <<'PY' || fail "hostile client"
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
s.connect(sys.argv[1])
s.send(b"\x00" * 7 + b"garbage" * 100)
s.settimeout(3)
reply = s.recv(100)
assert len(reply) == 24 and reply[:4] == b"TCRM", reply   # -EPROTO reply, little-endian magic
assert s.recv(100) == b""                                 # then closed
PY
"$CTL" -S "$TMP/a.sock" status >/dev/null || fail "daemon hurt by a hostile client"
grep -q "control: malformed request from pid [0-9]*, closing the client" "$TMP/a.log" || fail "no log of it"

# A second daemon on the same live control socket is refused.
ip netns exec "$NS_A" "$BUILD/sbin/metaroced" --set "plane=0 ${TAG}a0 198.18.0.1" \
	--set "port=4800" --set "control_socket=$TMP/a.sock" >"$TMP/second.log" 2>&1
[ $? -eq 1 ] || fail "a second daemon on a live socket did not exit 1"
grep -q "another metaroced is listening on $TMP/a.sock" "$TMP/second.log" || fail "second msg"

# A reload with a broken file names the fault and keeps running.
echo "peer_prefix = 198.18.0.0/40" >>"$TMP/b.conf"
kill -HUP "$PID_b"
wait_for "$TMP/b.log" "reload failed, keeping the running configuration: $TMP/b.conf:5: prefix length '40' is out of range for IPv4"
kill -0 "$PID_b" || fail "b died on a bad reload"

# SIGTERM: a clean stop, exit status 0, with its counters.
kill -TERM "$PID_a" "$PID_b"
wait "$PID_a" || fail "a exited $?"
wait "$PID_b" || fail "b exited $?"
grep -q "stopped: [0-9]* datagrams in" "$TMP/a.log" || fail "a did not say it stopped"
[ ! -e "$TMP/a.sock" ] || fail "a left its control socket behind"
PIDS=""

# Usage and configuration errors: exit 2, and the message says what is wrong.
"$BUILD/sbin/metaroced" --set port=0 >"$TMP/err.log" 2>&1
[ $? -eq 2 ] || fail "--set port=0 did not exit 2"
grep -q "port must be a number from 1 to 65535, not '0'" "$TMP/err.log" || fail "port message"
"$BUILD/sbin/metaroced" -c "$TMP/missing.conf" >"$TMP/err.log" 2>&1
[ $? -eq 2 ] || fail "a missing -c file did not exit 2"
grep -q "missing.conf: No such file or directory" "$TMP/err.log" || fail "missing file message"
"$BUILD/sbin/metaroced" --set "control_socket=/tmp/x" >"$TMP/err.log" 2>&1
[ $? -eq 2 ] || fail "no planes did not exit 2"
grep -q "no plane is configured" "$TMP/err.log" || fail "no-plane message"
echo "--- a.log:"; cat "$TMP/a.log"; echo "--- b.log:"; cat "$TMP/b.log"; echo ok
