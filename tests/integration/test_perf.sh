# metaroce-perf over two metaroced: every test (write, read, send) in both modes, with every
# byte verified, several QPs, an iteration count and a duration, -j parsed back; then the
# refusals (usage errors exit 2 with the reason) and a server whose daemon is gone.
. "$(dirname "$0")/lib.sh"

two_daemons

# bandwidth, verified: every message's bytes checked where they land
perf_pair write_bw -e -- -t write -s 65537 -q 4 -Q 8 -n 200 -V -e
json_check write_bw 'j["messages"] == 800 and j["peer"]["verified"] == 800 and j["errors"] == 0 and j["peer"]["errors"] == 0'
perf_pair read_bw -- -t read -s 100000 -q 3 -n 150 -V
json_check read_bw 'j["messages"] == 450 and j["verified"] == 450 and j["errors"] == 0'
perf_pair send_bw -e -- -t send -s 4095 -q 2 -Q 32 -n 1000 -V -e
json_check send_bw 'j["messages"] == 2000 and j["peer"]["received"] == 2000 and j["peer"]["verified"] == 2000'
# by duration, 1 MiB messages, unverified: the peer's count of one-sided work is the client's
perf_pair write_dur -- -t write -s 1M -q 2 -D 1
json_check write_dur 'j["messages"] > 0 and j["peer"]["received"] == j["messages"] and 0.8 < j["seconds"] < 5 and j["gbps"] > 0'
# latency ping-pong, verified; percentiles ordered
for t in send write read; do
	perf_pair "${t}_lat" -- -t $t -m lat -s 3000 -n 300 -V
	perf_pair "${t}_lat_events" -e -- -t $t -m lat -s 3000 -n 100 -V -e
	json_check "${t}_lat_events" 'j["messages"] == 100 and j["errors"] == 0'
	json_check "${t}_lat" 'j["messages"] == 300 and j["latency_us"]["min"] <= j["latency_us"]["p50"] <= j["latency_us"]["p99"] <= j["latency_us"]["p99_9"] <= j["latency_us"]["max"] and j["errors"] == 0'
done
json_check send_lat 'j["verified"] == 300 and j["peer"]["verified"] == 300'
json_check write_lat 'j["verified"] == 300 and j["peer"]["verified"] == 300'
json_check read_lat 'j["latency_us"]["definition"] == "round trip"'

# text summary and progress lines
port=$((port + 1))
bg_b "$TMP/text.server.log" timeout 60 "$PERF" -p $port
srv=$BG
on_a timeout 60 "$PERF" -p $port -t send -D 2 -i 0.5 --progress 198.18.0.2 >"$TMP/text.out" \
	2>"$TMP/text.err" || { cat "$TMP/text.out" "$TMP/text.err"; fail "text output"; }
wait "$srv" || { cat "$TMP/text.server.log"; fail "text output server"; }
cat "$TMP/text.out"
grep -q '^client send bw: 65536 B x [0-9]* messages on 1 QP in' "$TMP/text.out" ||
	fail "no summary line"
grep -q 'goodput   [0-9.]* Gbit/s' "$TMP/text.out" || fail "no goodput line"
[ "$(grep -c 'Gbit/s' "$TMP/text.err")" -ge 2 ] || { cat "$TMP/text.err"; fail "fewer than 2 progress lines"; }
grep -q '^server send bw: 65536 B x [0-9]* messages' "$TMP/text.server.log" || fail "server summary"

# with -j, progress lines are JSON for programs: counts so far on the monotonic clock, never
# falling, ending at most at the summary's
port=$((port + 1))
bg_b "$TMP/jp.server.log" timeout 60 "$PERF" -p $port
srv=$BG
on_a timeout 60 "$PERF" -p $port -j -t write -s 64K -D 1 -i 0.05 --progress 198.18.0.2 \
	>"$TMP/jp.out" 2>"$TMP/jp.err" || { cat "$TMP/jp.out" "$TMP/jp.err"; fail "JSON progress"; }
wait "$srv" || { cat "$TMP/jp.server.log"; fail "JSON progress server"; }
python3 - "$TMP/jp.out" "$TMP/jp.err" <<'PY' || fail "JSON progress lines"
import json, sys
summary = json.load(open(sys.argv[1]))
lines = [json.loads(l)["progress"] for l in open(sys.argv[2]) if l.strip()]
assert len(lines) >= 5, lines
for a, b in zip(lines, lines[1:]):
    assert b["monotonic"] - a["monotonic"] > 0.05 - 1e-5 and b["bytes"] >= a["bytes"], (a, b)
    assert abs((b["monotonic"] - a["monotonic"]) - (b["elapsed"] - a["elapsed"])) < 1e-5, (a, b)
assert lines[-1]["bytes"] == 65536 * lines[-1]["messages"] <= summary["bytes"], (lines[-1], summary)
assert lines[-1]["bytes"] > 0
print("  JSON progress: %d lines, %d of %d bytes by the last" % (
    len(lines), lines[-1]["bytes"], summary["bytes"]))
PY

# usage errors: exit 2 and the reason
usage_case() {
	want=$1
	shift
	out=$("$PERF" "$@" 2>&1)
	rc=$?
	[ $rc -eq 2 ] || fail "metaroce-perf $*: exit $rc, 2 expected"
	echo "$out" | grep -q -- "$want" || fail "metaroce-perf $*: '$want' not in: $out"
}
usage_case "is not one of" -t atomic
usage_case "exclude each other" -D 1 -n 5
usage_case "outside 1..4096" -q 5000
usage_case "one QP" -m lat -q 2
usage_case "not a number of seconds" -D -1
usage_case "unexpected argument" a b
"$PERF" --version | grep -q '^metaroce-perf ' || fail "--version"
"$PERF" --help | grep -q -- '--verify' || fail "--help"

# no device without metaroce-run (and no RNIC here): a clear error, exit 1, before any wait
out=$(ip netns exec "$NS_A" "$PERF" -T 1 198.18.0.2 2>&1)
rc=$?
[ $rc -eq 1 ] || fail "metaroce-perf without a device: exit $rc"
echo "$out" | grep -q "no verbs device" || fail "no device: $out"
echo "$out"

# a server whose daemon dies mid-run: the client fails with a named error, never hangs
port=$((port + 1))
bg_b "$TMP/dead.server.log" timeout 60 "$PERF" -p $port
srv=$BG
bg_a "$TMP/dead.client.log" timeout 60 "$PERF" -p $port -t write -D 30 198.18.0.2
cli=$BG
# mid-run: the client's QP is up and its WRITEs flow
ctl_wait 10 "$TMP/a.sock" qp "any(q['state'] == 'rts' and q['tx_packets'] > 1000 for q in j['qps'])"
kill -KILL "$PID_b"
wait "$cli"
rc=$?
cat "$TMP/dead.client.log"
[ $rc -eq 1 ] || fail "client with a dead peer daemon: exit $rc, 1 expected"
wait "$srv" || true
