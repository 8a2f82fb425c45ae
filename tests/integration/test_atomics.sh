# Atomics between two hosts (SPEC 4.6): perftest's ib_atomic_bw and ib_atomic_lat, unmodified,
# with fetch-and-add and compare-and-swap; then, over 4 planes losing and duplicating 1% of
# packets, 1,000,000 fetch-and-adds from 4 QPs land as exactly 1,000,000 (every original value
# returned once), and a lock built on compare-and-swap never admits two holders
# (tests/verbs/atomic_check.c).
. "$(dirname "$0")/lib.sh"

command -v ib_atomic_bw >/dev/null || fail "ib_atomic_bw missing (perftest: make deps)"

two_daemons
for t in ib_atomic_bw ib_atomic_lat; do
	for op in FETCH_AND_ADD CMP_AND_SWAP; do
		bg_b "$TMP/$t.$op.server.log" timeout 60 "$t" -d metaroce0 -x 0 -F -n 2000 -A "$op"
		srv=$BG
		wait_listening "$NS_B" 18515
		on_a timeout 60 "$t" -d metaroce0 -x 0 -F -n 2000 -A "$op" 198.18.0.2 \
			>"$TMP/$t.$op.client.log" 2>&1 ||
			{ cat "$TMP/$t.$op.client.log"; fail "$t -A $op client"; }
		wait "$srv" || { cat "$TMP/$t.$op.server.log"; fail "$t -A $op server"; }
		line=$(grep -E '^ 8 +2000 ' "$TMP/$t.$op.client.log") ||
			{ cat "$TMP/$t.$op.client.log"; fail "$t -A $op: no result line"; }
		echo "  $t $op: $line"
	done
done
kill -TERM "$PID_a" "$PID_b"
wait "$PID_a" "$PID_b" 2>/dev/null
ip netns del "$NS_A"
ip netns del "$NS_B"

testbed_up --hosts 2 --planes 4
testbed_daemons 4 0 1
wait_for "$TMP/h0.log" "$DAEMON_UP"
wait_for "$TMP/h1.log" "$DAEMON_UP"
$TB impair --all-planes --loss 1 --duplicate 1
ip netns exec "mtb-$TESTBED-h1" env METAROCE_SOCKET="$TMP/h1.sock" "$BUILD/bin/metaroce-run" \
	timeout 300 "$BUILD/tests/verbs/atomic_check" -s >"$TMP/atomic.server.log" 2>&1 &
srv=$!
PIDS="$PIDS $srv"
ip netns exec "mtb-$TESTBED-h0" env METAROCE_SOCKET="$TMP/h0.sock" "$BUILD/bin/metaroce-run" \
	timeout 300 "$BUILD/tests/verbs/atomic_check" -q 4 -n 250000 -l 500 198.18.1.2 \
	>"$TMP/atomic.json" 2>"$TMP/atomic.err" ||
	{ cat "$TMP/atomic.err" "$TMP/atomic.json" "$TMP/atomic.server.log"; tail -n 20 "$TMP/h0.log"; fail "atomic_check client"; }
wait "$srv" || { cat "$TMP/atomic.server.log"; fail "atomic_check server"; }
cat "$TMP/atomic.server.log"
python3 - "$TMP/atomic.json" <<'PY' || fail "atomic_check: the counts do not hold"
import json, sys
j = json.load(open(sys.argv[1]))
assert j["adds"] == 1000000 and j["counter"] == 1000000 and j["holders"] == 0 and j["lock"] == 0, j
assert j["lock_rounds"] == 500 and j["lock_contended"] > 0, j
print("  1000000 fetch-and-adds from 4 QPs over 4 planes at 1%% loss and 1%% duplication: "
      "counter 1000000, %.0f adds/s, one add's round trip %.1f us; 4 x 500 lock rounds, "
      "%d tries found it taken, never two holders" %
      (j["adds_per_s"], j["add_round_trip_us"], j["lock_contended"]))
PY
$TB stats --json | python3 -c '
import json, sys
s = json.load(sys.stdin)
lost = [s[p]["spines"]["lost_random"] for p in "0123"]
dup = [s[p]["spines"].get("duplicated", 0) for p in "0123"]
assert all(l > 0 for l in lost), lost
print("  packets lost by the fabric per plane:", lost, "duplicated:", dup)' ||
	fail "the planes did not all lose packets"
