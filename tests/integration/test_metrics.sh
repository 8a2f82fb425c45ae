# Prometheus metrics: with metrics_listen set, GET /metrics over HTTP answers the text
# exposition format (checked line by line), the same families `metaroce-ctl metrics` prints,
# per plane and never per QP, with live path figures while a transfer runs; other paths get
# 404, other methods 405, HEAD the head; a silent connection holds nobody up; a bad
# metrics_listen is refused with a reason.
. "$(dirname "$0")/lib.sh"

command -v curl >/dev/null || fail "curl is missing (make deps)"
two_daemons
kill "$PID_a"
wait "$PID_a" 2>/dev/null
start_daemon "$NS_A" a --set "plane=0 ${TAG}a0 198.18.0.1" --set "plane=1 ${TAG}a1 198.19.0.1" \
	--set "peer_prefix=198.18.0.0/15" --set "control_socket=$TMP/a.sock" \
	--set "metrics_listen=127.0.0.1:9464"
wait_for "$TMP/a.log" "$DAEMON_UP"

# (verbs_check's client retries until its server listens)
bg_b "$TMP/live.server.log" "$BUILD/tests/verbs/verbs_check" -n 0 -s 65537
bg_a "$TMP/live.client.log" "$BUILD/tests/verbs/verbs_check" -n 0 -s 65537 198.18.0.2
# scrape until the transfer runs on every path: the 8 up and with RTT samples (on 2 busy
# cores a daemon off its CPU can fail a path for a moment; it comes back within a round trip)
all_paths_up() {
	ip netns exec "$NS_A" curl -sS -D "$TMP/head.txt" http://127.0.0.1:9464/metrics \
		>"$TMP/metrics.txt" || return 1
	awk '$1 ~ /^metaroce_path_up\{.*state="up"/ {up += $2} $1 ~ /^metaroce_path_rtt_seconds/ && $2 > 0 {rtt++}
	     END {exit !(up == 8 && rtt == 2)}' "$TMP/metrics.txt" && return 0
	grep '^metaroce_path_up\|^metaroce_path_rtt_seconds\|^metaroce_qps' "$TMP/metrics.txt"
	return 1
}
wait_until 10 "the 8 paths were never all up with RTTs" all_paths_up
grep -qi '^content-type: text/plain; version=0.0.4' "$TMP/head.txt" || fail "content type"
"$BUILD/bin/metaroce-ctl" -S "$TMP/a.sock" metrics >"$TMP/ctl.txt" || fail "metaroce-ctl metrics"
python3 - "$TMP/metrics.txt" "$TMP/ctl.txt" <<'PY' || fail "exposition format"
import re, sys
text, ctl = open(sys.argv[1]).read(), open(sys.argv[2]).read()
sample = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{([a-zA-Z_][a-zA-Z0-9_]*="[^"\\]*"'
                    r'(,[a-zA-Z_][a-zA-Z0-9_]*="[^"\\]*")*)\})? (-?[0-9.]+(e[+-]?[0-9]+)?)$')
types, values = {}, {}
for line in text.splitlines():
    if line.startswith("# HELP "):
        continue
    if line.startswith("# TYPE "):
        _, _, name, kind = line.split(" ")
        assert kind in ("counter", "gauge"), line
        types[name] = kind
        continue
    m = sample.match(line)
    assert m, "not a sample: %r" % line
    name = m.group(1)
    assert name in types, "sample before its TYPE: " + line
    assert not re.search(r"[{,]qp\w*=", m.group(3) or ""), "a label per QP: " + line
    if types[name] == "counter":
        assert name.endswith("_total"), name
    values.setdefault(name, []).append((m.group(3) or "", float(m.group(5))))
for need in ("metaroce_build_info", "metaroce_path_rtt_seconds", "metaroce_path_retransmits_total",
             "metaroce_path_up", "metaroce_rx_datagrams_total", "metaroce_qps"):
    assert need in values, "missing " + need
up = {lab: v for lab, v in values["metaroce_path_up"]}
assert up['plane="0",state="up"'] == 4 and up['plane="1",state="up"'] == 4, up
rtt = {lab: v for lab, v in values["metaroce_path_rtt_seconds"]}
assert all(v > 0 for v in rtt.values()), rtt
assert dict(values["metaroce_qps"])['state="rts"'] == 1
ctl_names = {l.split(" ")[2] for l in ctl.splitlines() if l.startswith("# TYPE ")}
assert ctl_names == set(types), (ctl_names ^ set(types))
print("exposition ok:", len(types), "families")
PY
code=$(ip netns exec "$NS_A" curl -s -o /dev/null -w '%{http_code}' http://127.0.0.1:9464/other)
[ "$code" = 404 ] || fail "GET /other answered $code, not 404"
code=$(ip netns exec "$NS_A" curl -s -o /dev/null -w '%{http_code}' -X POST http://127.0.0.1:9464/metrics)
[ "$code" = 405 ] || fail "POST /metrics answered $code, not 405"
ip netns exec "$NS_A" curl -s -I http://127.0.0.1:9464/metrics >"$TMP/head_only.txt" ||
	fail "HEAD /metrics"
grep -q "^HTTP/1.1 200" "$TMP/head_only.txt" || fail "HEAD /metrics: $(cat "$TMP/head_only.txt")"
# a scraper that connects and says nothing holds nothing up: another is answered meanwhile
ip netns exec "$NS_A" python3 -c '
import socket, time
s = socket.create_connection(("127.0.0.1", 9464)); time.sleep(1.5)' &
quiet=$!
silent_open() { ip netns exec "$NS_A" ss -Htn state established "dport = :9464" | grep -q .; }
wait_until 5 "the silent connection never opened" silent_open
code=$(ip netns exec "$NS_A" curl -s -m 1 -o /dev/null -w '%{http_code}' http://127.0.0.1:9464/metrics)
[ "$code" = 200 ] || fail "with a silent connection open, GET /metrics answered $code"
wait "$quiet"
kill "$BG" 2>/dev/null

"$BUILD/sbin/metaroced" --set "plane=0 lo 127.0.0.1" --set "metrics_listen=localhost:80" \
	--set "control_socket=$TMP/x.sock" >"$TMP/err.log" 2>&1
[ $? -eq 2 ] || fail "a bad metrics_listen did not exit 2"
grep -q "'localhost' is not an IPv4 or IPv6 address" "$TMP/err.log" ||
	fail "unexpected message: $(cat "$TMP/err.log")"
echo PASS
