# Unmodified verbs programs over two metaroced in network namespaces: ibv_rc_pingpong from
# ibverbs-utils, ib_write_bw / ib_read_bw / ib_send_bw from perftest, and
# tests/verbs/verbs_check (every RC opcode, 1 B to 16 MiB, unaligned,
# byte-exact) through metaroce-run; 64 QPs at once; the extended verbs and completion
# channels; loopback QPs in one process and two processes on one daemon; metaroce-ctl qp and
# path show a live QP spraying over both planes.
. "$(dirname "$0")/lib.sh"

command -v ibv_rc_pingpong >/dev/null || fail "ibv_rc_pingpong missing (ibverbs-utils: make deps)"
command -v ib_write_bw >/dev/null || fail "ib_write_bw missing (perftest: make deps)"
two_daemons

# ibv_rc_pingpong -g 0, both sides unmodified
bg_b "$TMP/pp.server.log" timeout 60 ibv_rc_pingpong -g 0
srv=$BG
wait_listening "$NS_B" 18515 # its client tries once
on_a timeout 60 ibv_rc_pingpong -g 0 198.18.0.2 >"$TMP/pp.client.log" 2>&1 ||
	{ cat "$TMP/pp.client.log" "$TMP/pp.server.log"; fail "ibv_rc_pingpong client"; }
wait "$srv" || { cat "$TMP/pp.server.log"; fail "ibv_rc_pingpong server"; }
grep -q "8192000 bytes in" "$TMP/pp.client.log" || fail "ibv_rc_pingpong: no transfer line"
grep -q "8192000 bytes in" "$TMP/pp.server.log" || fail "ibv_rc_pingpong server: no transfer line"
grep "bytes in" "$TMP/pp.client.log"

# the same with completion channels (-e)
bg_b "$TMP/ppe.server.log" timeout 60 ibv_rc_pingpong -g 0 -e
srv=$BG
wait_listening "$NS_B" 18515
on_a timeout 60 ibv_rc_pingpong -g 0 -e 198.18.0.2 >"$TMP/ppe.client.log" 2>&1 ||
	{ cat "$TMP/ppe.client.log"; fail "ibv_rc_pingpong -e client"; }
wait "$srv" || fail "ibv_rc_pingpong -e server"

# and with libmetaroce spinning in ibv_get_cq_event (METAROCE_BUSY_POLL): an armed CQ's
# completion is taken by the spinning library instead of waking it through the channel, so
# host A's daemon counts spun events; every event still arrives (the ping-pong completes)
metric_a() {
	"$BUILD/bin/metaroce-ctl" -S "$TMP/a.sock" metrics | awk -v n="$1" '$1 == n {print $2}'
}
spun0=$(metric_a metaroce_cq_events_spun_total)
bg_b "$TMP/ppbusy.server.log" env METAROCE_BUSY_POLL=yes timeout 60 ibv_rc_pingpong -g 0 -e
srv=$BG
wait_listening "$NS_B" 18515
on_a env METAROCE_BUSY_POLL=200us timeout 60 ibv_rc_pingpong -g 0 -e 198.18.0.2 \
	>"$TMP/ppbusy.client.log" 2>&1 ||
	{ cat "$TMP/ppbusy.client.log"; fail "ibv_rc_pingpong -e client, METAROCE_BUSY_POLL"; }
wait "$srv" || fail "ibv_rc_pingpong -e server, METAROCE_BUSY_POLL"
grep -q "8192000 bytes in" "$TMP/ppbusy.client.log" || fail "busy-polling ping-pong: no transfer"
spun=$(($(metric_a metaroce_cq_events_spun_total) - spun0))
[ "$spun" -gt 0 ] || fail "METAROCE_BUSY_POLL=200us: no completion event was taken spinning"
echo "busy-polling ibv_rc_pingpong -e: $spun events taken spinning on host A"

# perftest, unmodified: WRITE, READ (its server stays in RTR and answers from there) and SEND
for bw in ib_write_bw ib_read_bw ib_send_bw; do
	bg_b "$TMP/$bw.server.log" timeout 60 "$bw" -d metaroce0 -x 0 -F -n 500
	srv=$BG
	wait_listening "$NS_B" 18515
	on_a timeout 60 "$bw" -d metaroce0 -x 0 -F -n 500 198.18.0.2 >"$TMP/$bw.client.log" 2>&1 ||
		{ cat "$TMP/$bw.client.log"; fail "$bw client"; }
	wait "$srv" || { cat "$TMP/$bw.server.log"; fail "$bw server"; }
	grep -E '^ 65536 +500 ' "$TMP/$bw.client.log" || fail "$bw: no result line"
done

verbs_pair all --
verbs_pair qp64 -- -q 64 -s 1,4095,65537
verbs_pair extended -x -e -- -x -e -s 1,4096,1M+3

# the calls verbs_check does not reach: attributes, overlapping registrations, rereg, inline,
# query, refusals
on_a timeout 60 "$BUILD/tests/verbs/verbs_api_check" >"$TMP/api.log" 2>&1 ||
	{ cat "$TMP/api.log"; tail -n 20 "$TMP/a.log"; fail "verbs_api_check"; }
grep -c '^ok' "$TMP/api.log"

# loopback: two QPs of one process, connected to each other
on_a timeout 120 "$BUILD/tests/verbs/verbs_check" -l -s 1,65537,1M+3 >"$TMP/lo.log" 2>&1 ||
	{ cat "$TMP/lo.log"; fail "loopback QPs in one process"; }
# two client processes of one daemon, connected to each other
bg_a "$TMP/two.server.log" timeout 120 "$BUILD/tests/verbs/verbs_check" -s 1,65537 -p 18601
srv=$BG
on_a timeout 120 "$BUILD/tests/verbs/verbs_check" -s 1,65537 -p 18601 127.0.0.1 \
	>"$TMP/two.client.log" 2>&1 || { cat "$TMP/two.client.log"; fail "two processes, one daemon"; }
wait "$srv" || { cat "$TMP/two.server.log"; fail "two processes, one daemon (server)"; }

# a live QP: metaroce-ctl shows it in RTS, spraying over both planes
verbs_check_bg() {
	bg_b "$TMP/live.server.log" "$BUILD/tests/verbs/verbs_check" -n 0 -s 65537
	live_srv=$BG
	# (verbs_check's client retries until its server listens)
	bg_a "$TMP/live.client.log" "$BUILD/tests/verbs/verbs_check" -n 0 -s 65537 198.18.0.2
	live_cli=$BG
}
verbs_check_bg
ctl_wait 10 "$TMP/a.sock" "qp" "len(j['qps']) == 1 and j['qps'][0]['state'] == 'rts' and j['qps'][0]['paths'] == 8 and j['qps'][0]['tx_packets'] > 0"
ctl_wait 10 "$TMP/a.sock" "path" "len(j['paths']) == 8 and {p['plane'] for p in j['paths']} == {0, 1} and all(p['tx_packets'] > 0 for p in j['paths'])"
"$BUILD/bin/metaroce-ctl" -S "$TMP/a.sock" qp show
"$BUILD/bin/metaroce-ctl" -S "$TMP/a.sock" path show | head -n 8
kill "$live_cli" "$live_srv" 2>/dev/null
wait "$live_cli" "$live_srv" 2>/dev/null
echo "PASS"
