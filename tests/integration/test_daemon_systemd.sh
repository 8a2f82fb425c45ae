# metaroced under systemd's notification protocol: READY with a STATUS line once it serves,
# WATCHDOG at half the WATCHDOG_USEC interval, RELOADING then READY around a SIGHUP, and
# STOPPING on SIGTERM. A python listener plays systemd on a NOTIFY_SOCKET.
. "$(dirname "$0")/lib.sh"

two_hosts
python3 - "$TMP/notify" "$TMP/notify.log" <<'PY' &
import socket, sys, time
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
s.settimeout(10)
with open(sys.argv[2], "w", buffering=1) as log:
    while True:
        try:
            msg = s.recv(4096).decode()
        except socket.timeout:
            break
        log.write(msg.replace("\n", "|") + "\n")
        if "STOPPING=1" in msg:
            break
PY
PIDS="$PIDS $!"
LISTENER=$!
wait_until 5 "the listener did not bind $TMP/notify" test -S "$TMP/notify"

NOTIFY_SOCKET="$TMP/notify" WATCHDOG_USEC=200000 \
	start_daemon "$NS_A" a --set "plane=0 ${TAG}a0 198.18.0.1" --set "control_socket=$TMP/a.sock"
wait_for "$TMP/notify.log" "^READY=1|STATUS=backend [a-z]*, 1 planes, port 4792$"
# pings at half the 0.2 s interval: 3 within 0.5 s of READY (a rate: the bound is the check)
pings() { [ "$(grep -c '^WATCHDOG=1$' "$TMP/notify.log")" -ge 3 ]; }
wait_until 0.5 "fewer than 3 watchdog pings in 0.5 s" pings
# the backend named is the one the daemon runs (auto: xdp where the kernel lets it attach)
backend=$(ctl_json "$TMP/a.sock" status "j['backend']") || fail "metaroce-ctl -j status"
grep -qx "READY=1|STATUS=backend $backend, 1 planes, port 4792" "$TMP/notify.log" ||
	fail "STATUS does not name backend $backend"
kill -HUP "$PID_a"
wait_for "$TMP/notify.log" "^RELOADING=1$"
kill -TERM "$PID_a"
wait_for "$TMP/notify.log" "^STOPPING=1$"
wait "$PID_a" || fail "daemon exited $?"
wait "$LISTENER"
grep -A1 '^RELOADING=1$' "$TMP/notify.log" | grep -q '^READY=1$' || fail "no READY after RELOADING"
PIDS=""
cat "$TMP/notify.log"
echo ok
