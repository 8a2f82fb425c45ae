# Worker threads (workers = 2 on both daemons): a verified transfer over 4 QPs streams while
# QPs are created and destroyed on every worker (a ping-pong at a time, each with QPs of its
# own on both daemons) and plane 1 is drained and restored under them. Every byte of the
# transfer arrives right, every ping-pong completes, the QPs run on both workers (qp shows
# which, the metrics count each worker's QPs, turns and CPU), none errs, and once all are
# gone the workers hold none and the daemons answer. Then again with daemons that may not load
# BPF programs (no CAP_BPF, as a unit without it): the kernel spreads datagrams over the
# workers' sockets by hash, and the workers pass each other what belongs to the other's QPs.
# Last, the xdp backend's workers: one XDP program with an event ring per worker.
. "$(dirname "$0")/lib.sh"

CTL="$BUILD/bin/metaroce-ctl"
PERF="$BUILD/bin/metaroce-perf"
METAROCE_TEST_WORKERS=2
two_daemons

metric() { # SOCKET NAME{LABELS}: the sample's value
	"$CTL" -S "$1" metrics | awk -v n="$2" '$1 == n {print $2}'
}
grep -q "2 workers" "$TMP/a.log" || fail "daemon a does not say it runs 2 workers"

# the transfer: 4 QPs, every byte checked where it lands, running until the churn is over
# (SIGINT ends it cleanly, with its report), however slow the churn (ThreadSanitizer)
port=18790
bg_b "$TMP/x.server.log" timeout 200 "$PERF" -p $port
srv=$BG
bg_a "$TMP/x.json" timeout 200 "$PERF" -p $port -j -t write -s 65537 -q 4 -Q 8 -D 180 -V \
	198.18.0.2
cli=$BG
# placed over both workers, on both daemons, each running its own
both_workers() { # SOCKET
	ctl_true "$1" qp "len([q for q in j['qps'] if q['state'] == 'rts']) >= 4 and {q['worker'] for q in j['qps']} == {0, 1}"
}
wait_until 15 "a's QPs not on both workers" both_workers "$TMP/a.sock"
wait_until 5 "b's QPs not on both workers" both_workers "$TMP/b.sock"
for k in 0 1; do
	[ "$(metric "$TMP/a.sock" "metaroce_worker_qps{worker=\"$k\"}")" -ge 2 ] ||
		fail "worker $k of a runs fewer than 2 QPs"
done

# QPs come and go on every worker while the transfer runs: each ping-pong a QP on each side
churn() {
	i=0
	while [ $i -lt "$1" ]; do
		bg_b "$TMP/pp.server.log" timeout 30 ibv_rc_pingpong -g 0 -n 50 -p 18515
		psrv=$BG
		wait_listening "$NS_B" 18515
		on_a timeout 30 ibv_rc_pingpong -g 0 -n 50 -p 18515 198.18.0.2 \
			>"$TMP/pp.client.log" 2>&1 ||
			{ cat "$TMP/pp.client.log" "$TMP/pp.server.log"; fail "ping-pong $i (client)"; }
		wait "$psrv" || { cat "$TMP/pp.server.log"; fail "ping-pong $i (server)"; }
		grep -q "bytes in" "$TMP/pp.client.log" || fail "ping-pong $i: no transfer line"
		i=$((i + 1))
	done
}
churn 4
# shellcheck disable=SC2086
"$CTL" -S "$TMP/a.sock" path set plane 1 down | grep -q "plane drained" ||
	fail "path set plane 1 down"
churn 4
"$CTL" -S "$TMP/a.sock" path set plane 1 up >/dev/null || fail "path set plane 1 up"
churn 4
gone "$cli" && fail "the transfer ended before the churn did"
kill -INT "$cli" # timeout passes it on to the client, which stops posting and reports

wait "$cli" || { cat "$TMP/x.json" "$TMP/x.server.log"; fail "the transfer's client"; }
wait "$srv" || { cat "$TMP/x.server.log"; fail "the transfer's server"; }
python3 - "$TMP/x.json" <<'PY' || fail "the transfer under churn and a drain"
import json, sys
j = json.load(open(sys.argv[1]))
print("transfer: %d messages, %d verified by the peer, %.2f Gbit/s" %
      (j["messages"], j["peer"]["verified"], j["gbps"]))
sys.exit(0 if j["messages"] > 0 and j["peer"]["verified"] == j["messages"] and
         j["errors"] == 0 and j["peer"]["errors"] == 0 else 1)
PY

# all gone: no worker runs a QP, none erred, each worker worked, the daemons answer
for s in a b; do
	ctl_wait 10 "$TMP/$s.sock" qp "len(j['qps']) == 0"
	for k in 0 1; do
		[ "$(metric "$TMP/$s.sock" "metaroce_worker_qps{worker=\"$k\"}")" = 0 ] ||
			fail "$s: worker $k still runs QPs"
		[ "$(metric "$TMP/$s.sock" "metaroce_worker_busy_turns_total{worker=\"$k\"}")" -gt 0 ] ||
			fail "$s: worker $k never ran a QP"
		python3 -c "import sys; sys.exit(0 if float(sys.argv[1]) > 0 else 1)" \
			"$(metric "$TMP/$s.sock" "metaroce_worker_cpu_seconds_total{worker=\"$k\"}")" ||
			fail "$s: worker $k used no CPU"
	done
	[ "$(metric "$TMP/$s.sock" metaroce_error_completions_total)" = 0 ] ||
		fail "$s: error completions"
	grep -q "qp [0-9]* error" "$TMP/$s.log" && fail "$s: a QP erred"
	kill -0 "$(eval echo "\$PID_$s")" || fail "daemon $s is gone"
done
"$CTL" -S "$TMP/a.sock" status | grep "^worker" # their turns, CPU and hand-overs

# Without the selector: daemons without CAP_BPF (and CAP_SYS_ADMIN, which would do instead)
kill -TERM "$PID_a" "$PID_b"
wait "$PID_a" "$PID_b" || fail "the daemons did not stop cleanly"
printf '#!/bin/sh\nexec setpriv --bounding-set -bpf,-sys_admin --inh-caps -bpf,-sys_admin %s "$@"\n' \
	"${METAROCED:-$BUILD/sbin/metaroced}" >"$TMP/nobpf"
chmod +x "$TMP/nobpf"
METAROCED="$TMP/nobpf" start_two_daemons
wait_for "$TMP/a.log" "$DAEMON_UP"
wait_for "$TMP/b.log" "$DAEMON_UP"
for s in a b; do
	grep -q "2 workers without the socket selector" "$TMP/$s.log" ||
		fail "$s: no word of the missing selector: $(cat "$TMP/$s.log")"
done
perf_pair spread -- -t write -s 65537 -q 4 -Q 8 -n 2000 -V
json_check spread 'j["messages"] == 8000 and j["peer"]["verified"] == 8000 and j["errors"] == 0'
handed() { # SOCKET: datagrams its workers passed to each other
	"$CTL" -S "$1" metrics |
		awk '$1 ~ /^metaroce_worker_handovers_total\{.*result="sent"/ { n += $2 } END { print n + 0 }'
}
for s in a b; do
	[ "$(handed "$TMP/$s.sock")" -gt 0 ] || fail "$s: no datagram was handed over"
	echo "$s: $(handed "$TMP/$s.sock") datagrams handed over between its workers"
done

# The xdp backend with 2 workers: one XDP program, an event ring per worker, each worker's
# AF_XDP sockets on its own receive queues (the veths have a queue per worker). WRITEs over 4
# QPs on both workers are placed in XDP and verified where they land; each worker ran QPs,
# none of the program's events was lost, and each worker has its sockets.
kill -TERM "$PID_a" "$PID_b"
wait "$PID_a" "$PID_b" || fail "the daemons without the selector did not stop cleanly"
start_two_daemons --set backend=xdp
started() { grep -q "$DAEMON_UP\|cannot start" "$TMP/$1.log"; }
wait_until 5 "metaroced a neither started nor gave up" started a
wait_until 5 "metaroced b neither started nor gave up" started b
why=$(sed -n 's/.*cannot start: \(backend xdp: .*\)/\1/p' "$TMP/a.log" "$TMP/b.log" | head -n 1)
[ -z "$why" ] ||
	skip "the udp backend's workers passed; the xdp backend cannot attach on this kernel: $why"
wait_for "$TMP/b.log" "backend xdp"
grep -q "2 workers: the XDP program's events go to each QP's worker" "$TMP/b.log" ||
	fail "b: no word of how its 2 workers share the XDP program: $(cat "$TMP/b.log")"
xdp_json() { # SOCKET EXPRESSION over `metaroce-ctl -j xdp`
	"$CTL" -S "$1" -j xdp |
		python3 -c 'import json, sys; j = json.load(sys.stdin); print('"$2"')'
}
placed0=$(xdp_json "$TMP/b.sock" 'j["packets"]["placed"]')
busy0=$(metric "$TMP/b.sock" 'metaroce_worker_busy_turns_total{worker="1"}')
perf_pair xdp -- -t write -s 65537 -q 4 -Q 8 -n 500 -V
json_check xdp 'j["messages"] == 2000 and j["peer"]["verified"] == 2000 and j["errors"] == 0'
placed=$(($(xdp_json "$TMP/b.sock" 'j["packets"]["placed"]') - placed0))
echo "b: $placed packets placed in XDP," \
	"$(xdp_json "$TMP/b.sock" 'j["af_xdp"]["sockets"]') AF_XDP sockets"
# 2000 x 65537 B is at least 2000 x 47 packets of at most 1408 B
[ "$placed" -ge 90000 ] || fail "b: only $placed packets placed in XDP"
[ "$(xdp_json "$TMP/b.sock" 'j["packets"]["event_lost"]')" = 0 ] || fail "b: events lost"
[ "$(metric "$TMP/b.sock" 'metaroce_worker_busy_turns_total{worker="1"}')" -gt "$busy0" ] ||
	fail "b: worker 1 ran no QP"
queues=$(ip -n "$NS_B" -d link show "${TAG}b0" | sed -n 's/.*numrxqueues \([0-9]*\).*/\1/p')
[ "$(xdp_json "$TMP/b.sock" 'j["af_xdp"]["sockets"]')" -eq $((2 * queues)) ] ||
	fail "b: AF_XDP sockets are not one per receive queue of each plane"
# one WRITE in flight a QP: between messages each worker sleeps, and the program must wake
# the worker that runs the QP a placed packet is for (each worker said it sleeps)
woken() { # SOCKET WORKER: the program's wakeups of that worker
	metric "$1" "metaroce_xdp_sleeping_events_total{worker=\"$2\",wakeup=\"yes\"}"
}
perf_pair xdp_one -- -t write -s 8192 -q 2 -Q 1 -n 300 -V
json_check xdp_one 'j["messages"] == 600 and j["peer"]["verified"] == 600 and j["errors"] == 0'
for k in 0 1; do
	[ "$(woken "$TMP/b.sock" $k)" -gt 0 ] || fail "b: the XDP program never woke worker $k"
	echo "b: the XDP program woke worker $k $(woken "$TMP/b.sock" $k) times"
done
for s in a b; do
	[ "$(metric "$TMP/$s.sock" metaroce_error_completions_total)" = 0 ] ||
		fail "$s: error completions over xdp"
done
