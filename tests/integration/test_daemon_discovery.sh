# Two metaroced, one per namespace, over two planes: A names one address of B and learns
# both of B's planes (SPEC 12.2), B learns A's from the DISCOVER; a bad reload keeps the
# running configuration; SIGTERM stops both cleanly; usage errors exit 2 with a reason.
. "$(dirname "$0")/lib.sh"

two_hosts
cat >"$TMP/b.conf" <<EOF
plane = 0 ${TAG}b0 198.18.0.2
plane = 1 ${TAG}b1 198.19.0.2
peer_prefix = 198.18.0.0/15
control_socket = $TMP/b.sock
EOF

start_daemon "$NS_B" b -c "$TMP/b.conf"
wait_for "$TMP/b.log" "backend udp (auto: the xdp backend is not built yet), port 4792, 2 planes"
# shellcheck disable=SC2086
start_daemon "$NS_A" a --set "plane=0 ${TAG}a0 198.18.0.1" --set "plane=1 ${TAG}a1 198.19.0.1" \
	--set "control_socket=$TMP/a.sock" --discover 198.18.0.2
wait_for "$TMP/a.log" "peer 198.18.0.2 discovered: node [0-9a-f]*, port 4792, planes 0=198.18.0.2 1=198.19.0.2"
wait_for "$TMP/b.log" "peer 198.18.0.1 discovered: node [0-9a-f]*, port 4792, planes 0=198.18.0.1 1=198.19.0.1"

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
