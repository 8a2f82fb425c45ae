# What goes wrong around verbs clients, and what the daemon does about it: a hostile client
# (tests/verbs/hostile_client.c) gets refusals and error completions while another client's
# transfer on the same daemon carries on; a client killed with SIGKILL mid-transfer leaves no
# QP, CQ, MR, mapping or file descriptor behind in the daemon (counted, not assumed); a daemon
# stopped under load flushes its clients' work with an error status they see, and the peer's
# clients fail their work with an error instead of hanging; a daemon killed outright cannot
# flush, and its clients, busy-polling or asleep on a completion channel, still see their
# work flushed (libmetaroce notices the hang-up), with IBV_EVENT_DEVICE_FATAL and the port
# down (tests/verbs/fatal_check).
. "$(dirname "$0")/lib.sh"

command -v ibv_rc_pingpong >/dev/null || fail "ibv_rc_pingpong missing (ibverbs-utils: make deps)"
two_daemons
fds_of() { ls "/proc/$1/fd" | wc -l; }

# --- a hostile client next to a working one
fd_base=$(fds_of "$PID_a")
bg_b "$TMP/ok.server.log" timeout 120 "$BUILD/tests/verbs/verbs_check"
ok_srv=$BG
bg_a "$TMP/ok.client.log" timeout 120 "$BUILD/tests/verbs/verbs_check" -n 3 -s 1,1M+3 198.18.0.2
ok_cli=$BG
ip netns exec "$NS_A" "$BUILD/tests/verbs/hostile_client" "$TMP/a.sock" ||
	{ tail -n 20 "$TMP/a.log"; fail "hostile client"; }
wait "$ok_cli" || { cat "$TMP/ok.client.log"; fail "a good client beside the hostile one"; }
wait "$ok_srv" || fail "its server"
grep "verbs_check: OK" "$TMP/ok.client.log"

# --- SIGKILL mid-transfer: everything reclaimed
bg_b "$TMP/k.server.log" "$BUILD/tests/verbs/verbs_check" -n 0 -s 65537,1M+3
k_srv=$BG
bg_a "$TMP/k.client.log" "$BUILD/tests/verbs/verbs_check" -n 0 -q 4 -s 65537,1M+3 198.18.0.2
k_cli=$BG
# mid-transfer: its 4 QPs up, their memory registered
ctl_wait 10 "$TMP/a.sock" status "j['qps'] == 4 and j['mrs'] >= 4 and j['mapped_bytes'] > 4 << 20"
ctl_wait 10 "$TMP/a.sock" qp "len(j['qps']) == 4 and all(q['state'] == 'rts' and q['tx_packets'] > 0 for q in j['qps'])"
kill -KILL "$k_cli"
wait "$k_cli" 2>/dev/null
wait_until 5 "daemon kept a killed client's objects" ctl_true "$TMP/a.sock" status \
	"(j['clients'], j['qps'], j['cqs'], j['mrs'], j['mapped_bytes']) == (0, 0, 0, 0, 0)"
# metaroce-ctl's own connection may close a moment after it prints
fds_back() { echo "$(fds_of "$PID_a") fds, $fd_base before"; [ "$(fds_of "$PID_a")" -eq "$fd_base" ]; }
wait_until 2 "daemon holds more fds after the client died than before" fds_back
grep "client pid $k_cli gone: reclaimed 4 QPs" "$TMP/a.log" || fail "no reclaim log line"
kill "$k_srv" 2>/dev/null
wait "$k_srv" 2>/dev/null

# --- daemon B stopped under load: its client sees flushed work, A's client an error
bg_b "$TMP/s.server.log" timeout 60 ibv_rc_pingpong -g 0 -n 100000000
s_srv=$BG
wait_listening "$NS_B" 18515 # its client tries once
bg_a "$TMP/s.client.log" timeout 60 ibv_rc_pingpong -g 0 -n 100000000 198.18.0.2
s_cli=$BG
# under load: both QPs up and exchanging
for h in a b; do
	ctl_wait 10 "$TMP/$h.sock" qp "len(j['qps']) == 1 and j['qps'][0]['state'] == 'rts' and j['qps'][0]['completions'] > 100"
done
kill -TERM "$PID_b"
wait "$PID_b" || fail "daemon b did not stop cleanly"
wait "$s_srv"
rc=$?
[ $rc -ne 0 ] && [ $rc -ne 124 ] || { cat "$TMP/s.server.log"; fail "B's client: exit $rc, wanted an error, not a hang"; }
grep -q "Failed status Work Request Flushed Error" "$TMP/s.server.log" ||
	{ cat "$TMP/s.server.log"; fail "B's client saw no flush completion"; }
wait "$s_cli"
rc=$?
[ $rc -ne 0 ] && [ $rc -ne 124 ] || { cat "$TMP/s.client.log"; fail "A's client: exit $rc, wanted an error, not a hang"; }
grep "Failed status" "$TMP/s.server.log" "$TMP/s.client.log"

# --- daemon B killed under load: no flush from it, so its clients' library does it
start_daemon "$NS_B" b2 --set "plane=0 ${TAG}b0 198.18.0.2" --set "plane=1 ${TAG}b1 198.19.0.2" \
	--set "peer_prefix=198.18.0.0/15" --set "control_socket=$TMP/b.sock"
wait_for "$TMP/b2.log" "$DAEMON_UP"
for mode in poll events; do
	flag= port=18520
	[ $mode = events ] && flag=-e port=18521
	bg_b "$TMP/$mode.server.log" timeout 60 ibv_rc_pingpong -g 0 $flag -p $port -n 100000000
	eval "${mode}_srv=\$BG"
	wait_listening "$NS_B" $port
	bg_a "$TMP/$mode.client.log" timeout 60 ibv_rc_pingpong -g 0 $flag -p $port -n 100000000 198.18.0.2
	eval "${mode}_cli=\$BG"
done
ctl_wait 10 "$TMP/b.sock" qp "len(j['qps']) == 2 and all(q['state'] == 'rts' and q['completions'] > 100 for q in j['qps'])"
kill -KILL "$PID_b2"
wait "$PID_b2" 2>/dev/null
for mode in poll events; do
	eval "srv=\$${mode}_srv cli=\$${mode}_cli"
	wait "$srv"
	rc=$?
	[ $rc -ne 0 ] && [ $rc -ne 124 ] ||
		{ cat "$TMP/$mode.server.log"; fail "B's $mode client after SIGKILL: exit $rc, wanted an error, not a hang"; }
	grep -q "Failed status Work Request Flushed Error" "$TMP/$mode.server.log" ||
		{ cat "$TMP/$mode.server.log"; fail "B's $mode client saw no flush completion after SIGKILL"; }
	grep "Failed status" "$TMP/$mode.server.log"
	# A's client fails only if it had a send outstanding (its retries run out); one that
	# only waits for B's next message waits, as over any RC fabric when a peer vanishes
	# without a word: nothing told A's daemon
	kill "$cli" 2>/dev/null
	wait "$cli" 2>/dev/null
done

# --- what one program sees of it: flushes while busy-polling, DEVICE_FATAL, the port down
start_daemon "$NS_B" b3 --set "plane=0 ${TAG}b0 198.18.0.2" --set "plane=1 ${TAG}b1 198.19.0.2" \
	--set "peer_prefix=198.18.0.0/15" --set "control_socket=$TMP/b.sock"
wait_for "$TMP/b3.log" "$DAEMON_UP"
bg_b "$TMP/fatal.log" timeout 60 "$BUILD/tests/verbs/fatal_check"
fatal=$BG
wait_for "$TMP/fatal.log" "^ready"
kill -KILL "$PID_b3"
wait "$PID_b3" 2>/dev/null
wait "$fatal" || { cat "$TMP/fatal.log"; fail "fatal_check after the daemon's SIGKILL"; }
tail -n 1 "$TMP/fatal.log"
echo PASS
