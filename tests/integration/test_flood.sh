# A UDP flood from another process on an admitted host, at what one core sends, into daemon
# B's data port (datagrams of noise, half of them past the version check): while it lasts, B
# answers `metaroce-ctl status` within 1 s every time, and a transfer with every byte
# verified completes between A and B. B's receive work per loop turn is bounded, so the
# pump, the control socket and the watchdog run between bursts.
. "$(dirname "$0")/lib.sh"

FLOOD_SECONDS=6
two_daemons
data_port=$(ctl_json "$TMP/b.sock" status 'j["port"]')
malformed() {
	ip netns exec "$NS_B" "$BUILD/bin/metaroce-ctl" -S "$TMP/b.sock" metrics |
		awk '/^metaroce_rx_malformed_total/ { print $2 }'
}
before=$(malformed)
ip netns exec "$NS_A" "$BUILD/tests/integration/attack/udp_flood" 198.18.0.2 "$data_port" \
	"$FLOOD_SECONDS" >"$TMP/flood.out" 2>&1 &
flood=$!
PIDS="$PIDS $flood"

# B's control socket, probed back to back for as long as the flood lasts
status_probe "$TMP/b.sock" "$flood" "$TMP/probe.out"
probe=$PROBE

perf_pair flooded -e -- -t write -s 65536 -q 2 -Q 8 -n 300 -V -e
json_check flooded 'j["messages"] == 600 and j["peer"]["verified"] == 600 and j["errors"] == 0 and j["peer"]["errors"] == 0'
wait "$flood" || { cat "$TMP/flood.out"; fail "udp_flood"; }
wait "$probe" || { cat "$TMP/probe.out"; tail -n 5 "$TMP/b.log"; fail "B's control socket under the flood"; }
sent=$(cat "$TMP/flood.out")
after=$(malformed)
echo "flood: $sent datagrams sent, $((after - before)) counted malformed by B; $(cat "$TMP/probe.out")"
# the flood reached the daemon: otherwise the test proved nothing
[ "$((after - before))" -gt 10000 ] || fail "the flood did not reach B ($((after - before)) malformed)"
kill -0 "$PID_b" || fail "daemon B died"
