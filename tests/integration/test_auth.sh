# Peer authentication on real daemons (SPEC 14.6, issue 20), each case with daemons started
# for it:
#   keys         metaroced --public-key makes key_file (0600, in a 0700 directory) and prints
#                the same key again; a key file others can read, or a cluster key file that
#                holds no key, stops the daemon with the file named
#   allowed      A and B trust each other by public key alone: a WRITE transfer verified byte
#                for byte, status naming the key and one allowed peer
#   wrong place  B allows A's key only for an address A does not have: A's DISCOVERs are
#                refused as peer_key and A gives B up; both daemons still answer
#   other key    B holds another cluster key: refused as unauthenticated
#   off          B with auth = off says so loudly (log, status, metrics); A refuses its answers
#   replay       frames captured on A's link and sent again to B, during the transfer they
#                belong to (duplicates: dropped, the transfer intact) and into the next
#                transfer's (their QPs are gone: dropped unanswered)
#   xdp          the xdp backend authenticated: a verified transfer, its packets placed by
#                the XDP program after it checked their tags (R-345), none refused
#   full         auth = full: WRITE, SEND, READ and UD verified with every packet sealed; a
#                transfer of zeros leaves A as ciphertext (no run of 64 zero bytes, where
#                header mode shows thousands); a sealed daemon and an unsealed one refuse
#                each other's packets (R-342)
. "$(dirname "$0")/lib.sh"

CTL=$BUILD/bin/metaroce-ctl
two_hosts

metric() { # SOCKET NAME: a sample's value from the daemon's metrics
	"$CTL" -S "$1" metrics | awk -v m="$2" '$1 == m { print $2 }'
}
stop_both() {
	kill "$PID_a" "$PID_b" 2>/dev/null
	wait_until 10 "daemon a did not stop" gone "$PID_a"
	wait_until 10 "daemon b did not stop" gone "$PID_b"
}
start_a() {
	start_daemon "$NS_A" a --set "plane=0 ${TAG}a0 198.18.0.1" --set "plane=1 ${TAG}a1 198.19.0.1" \
		--set "peer_prefix=198.18.0.0/15" --set "control_socket=$TMP/a.sock" "$@"
}
start_b() {
	start_daemon "$NS_B" b --set "plane=0 ${TAG}b0 198.18.0.2" --set "plane=1 ${TAG}b1 198.19.0.2" \
		--set "peer_prefix=198.18.0.0/15" --set "control_socket=$TMP/b.sock" "$@"
}
both_up() {
	wait_for "$TMP/a.log" "$DAEMON_UP"
	wait_for "$TMP/b.log" "$DAEMON_UP"
}
write_verified() { # NAME: a verified WRITE transfer from A into B
	perf_pair "$1" -e -- -t write -s 65536 -n 2000 -V -e
	json_check "$1" 'j["messages"] == 2000 and j["peer"]["verified"] == 2000 and j["errors"] == 0'
}
peer_state() { # SOCKET ADDRESS STATE: the daemon's peer at ADDRESS is in STATE
	ctl_true "$1" peer "any(p['address'] == '$2' and p['state'] == '$3' for p in j['peers'])"
}
metric_at_least() { # SOCKET NAME MIN
	[ "$(metric "$1" "$2")" -ge "$3" ] 2>/dev/null
}

# --- keys -----------------------------------------------------------------------------------
mkey() { "$BUILD/sbin/metaroced" --set "key_file=$1" --public-key; }
pub=$(mkey "$TMP/keys/new.key") || fail "--public-key did not make a key"
[ "$(stat -c %a "$TMP/keys/new.key")" = 600 ] || fail "key_file is not 0600"
[ "$(stat -c %a "$TMP/keys")" = 700 ] || fail "key_file's directory is not 0700"
[ "$(mkey "$TMP/keys/new.key")" = "$pub" ] || fail "--public-key changed the key"
[ "${#pub}" -eq 44 ] || fail "public key '$pub' is not 44 characters of base64"
echo "keys: $pub, 0600 in a 0700 directory, the same twice"
refused_start() { # WHY SETTINGS...: the daemon does not start, naming WHY
	why=$1
	shift
	ip netns exec "$NS_A" timeout 10 "$BUILD/sbin/metaroced" --set "plane=0 ${TAG}a0 198.18.0.1" \
		--set "control_socket=$TMP/r.sock" "$@" >"$TMP/refused.log" 2>&1 &&
		fail "started with $*"
	grep -q "$why" "$TMP/refused.log" || { cat "$TMP/refused.log"; fail "no '$why' for $*"; }
	echo "refused: $(tail -n 1 "$TMP/refused.log")"
}
chmod 644 "$TMP/keys/new.key"
refused_start "new.key is readable by others" --set "key_file=$TMP/keys/new.key" \
	--set "cluster_key_file=$TMP/keys/new.key"
chmod 600 "$TMP/keys/new.key"
(umask 077 && echo "not a key" >"$TMP/keys/bad.cluster")
refused_start "bad.cluster holds no key" --set "key_file=$TMP/keys/new.key" \
	--set "cluster_key_file=$TMP/keys/bad.cluster"
refused_start "auth = header needs a cluster_key_file or allowed_peer" --set auth=header

# --- allowed peers, no cluster key ----------------------------------------------------------
pub_a=$(mkey "$TMP/a.key") && pub_b=$(mkey "$TMP/b.key") || fail "public keys"
NO_CLUSTER_KEY=1
start_a --set "allowed_peer=$pub_b 198.18.0.2/32,198.19.0.2/32"
start_b --set "allowed_peer=$pub_a 198.18.0.1/32,198.19.0.1/32"
both_up
ctl_check "$TMP/a.sock" status "j['auth'] == 'header' and j['public_key'] == '$pub_a' and \
j['allowed_peers'] == 1 and not j['cluster_key']"
grep -q "auth header: public key $pub_a" "$TMP/a.log" || fail "A's log does not name its key"
write_verified allowed
peer_state "$TMP/a.sock" 198.18.0.2 known || fail "A does not know B"
stop_both

# --- an allowed key from the wrong place ----------------------------------------------------
start_a --set "allowed_peer=$pub_b 198.18.0.2/32,198.19.0.2/32" --discover 198.18.0.2
start_b --set "allowed_peer=$pub_a 198.18.0.99/32"
both_up
wait_until 5 "B refused no DISCOVER as peer_key" \
	metric_at_least "$TMP/b.sock" 'metaroce_discovery_refused_total{reason="peer_key"}' 1
wait_until 5 "A did not give B up" peer_state "$TMP/a.sock" 198.18.0.2 unreachable
for s in a b; do
	timeout 1 "$CTL" -S "$TMP/$s.sock" status >/dev/null || fail "$s does not answer status"
done
grep -q "discover from 198.18.0.1 refused: its key is not allowed there" "$TMP/b.log" ||
	fail "B's log does not say why it refused A"
echo "wrong place: B refused $(metric "$TMP/b.sock" \
	'metaroce_discovery_refused_total{reason="peer_key"}') DISCOVERs as peer_key"
stop_both
unset NO_CLUSTER_KEY

# --- another cluster key ---------------------------------------------------------------------
head -c 32 /dev/urandom | base64 >"$TMP/other.key" && chmod 600 "$TMP/other.key"
start_a --discover 198.18.0.2
start_b --set "cluster_key_file=$TMP/other.key"
both_up
wait_until 5 "B refused no DISCOVER as unauthenticated" \
	metric_at_least "$TMP/b.sock" 'metaroce_discovery_refused_total{reason="unauthenticated"}' 1
wait_until 5 "A did not give B up" peer_state "$TMP/a.sock" 198.18.0.2 unreachable
peer_state "$TMP/b.sock" 198.18.0.1 known >/dev/null && fail "B knows A from another cluster"
[ "$(ctl_json "$TMP/b.sock" peer 'len(j["peers"])')" -eq 0 ] ||
	fail "B stored a peer it could not authenticate"
grep -q "discover from 198.18.0.1 refused: its tag is wrong" "$TMP/b.log" ||
	fail "B's log does not say why it refused A"
echo "other key: B refused $(metric "$TMP/b.sock" \
	'metaroce_discovery_refused_total{reason="unauthenticated"}') DISCOVERs, stored none"
stop_both

# --- auth off against auth header -------------------------------------------------------------
start_a --discover 198.18.0.2
start_b --set auth=off
both_up
grep -q "auth off: nothing is authenticated" "$TMP/b.log" || fail "B does not say auth is off"
ctl_check "$TMP/b.sock" status "j['auth'] == 'off'"
[ "$(metric "$TMP/b.sock" 'metaroce_auth{mode="off"}')" = 1 ] || fail "metrics hide auth off"
"$CTL" -S "$TMP/b.sock" status | grep -q "^auth OFF" || fail "status text hides auth off"
wait_until 5 "A refused no unauthenticated answer" \
	metric_at_least "$TMP/a.sock" 'metaroce_discovery_refused_total{reason="unauthenticated"}' 1
wait_until 5 "A did not give B up" peer_state "$TMP/a.sock" 198.18.0.2 unreachable
grep -q "discover_reply from 198.1[89].0.2 refused: it is not authenticated" "$TMP/a.log" ||
	fail "A's log does not say why it refused B's answers"
echo "off: B says so in its log, status and metrics; A refused its answers"
stop_both

# --- replay of captured packets ---------------------------------------------------------------
REPLAY="$(dirname "$0")/attack/replay.py"
start_a
start_b
both_up
duplicates() { metric "$TMP/b.sock" 'metaroce_qp_rx_dropped_total{reason="duplicate"}'; }
dup0=$(duplicates)
ip netns exec "$NS_A" python3 "$REPLAY" capture "${TAG}a0" 4792 3000 20 "$TMP/captured" \
	>"$TMP/replay_live.log" 2>&1 &
replayer=$!
PIDS="$PIDS $replayer"
perf_pair replay_live -e -- -t write -s 65536 -q 2 -D 6 -V -e
json_check replay_live 'j["messages"] > 0 and j["peer"]["verified"] == j["messages"] and j["errors"] == 0'
wait "$replayer" || { cat "$TMP/replay_live.log"; fail "the capture and replay"; }
# (how many of B's duplicates were replays cannot be told from its own resends)
echo "replay during the transfer: $(cat "$TMP/replay_live.log"); B dropped" \
	"$(($(duplicates) - dup0)) duplicates in all"
grep -q "captured 3000, replayed 3000" "$TMP/replay_live.log" || fail "the replay fell short"
# the next transfer: the replayed frames name QPs that are gone
ctl_wait 10 "$TMP/b.sock" qp "len(j['qps']) == 0"
noqp0=$(metric "$TMP/b.sock" metaroce_rx_no_qp_total)
two_qps() { [ "$(ctl_json "$TMP/b.sock" qp 'len(j["qps"])')" -ge 2 ]; }
(wait_until 20 "the next transfer's QPs" two_qps &&
	ip netns exec "$NS_A" python3 "$REPLAY" send "${TAG}a0" "$TMP/captured") \
	>"$TMP/replay_later.log" 2>&1 &
replayer=$!
PIDS="$PIDS $replayer"
perf_pair replay_later -e -- -t write -s 65536 -q 2 -D 4 -V -e
json_check replay_later 'j["messages"] > 0 and j["peer"]["verified"] == j["messages"] and j["errors"] == 0'
wait "$replayer" || { cat "$TMP/replay_later.log"; fail "the second replay"; }
noqp=$(($(metric "$TMP/b.sock" metaroce_rx_no_qp_total) - noqp0))
echo "replay into the next transfer: $(tail -n 1 "$TMP/replay_later.log"); B dropped $noqp for no QP"
grep -q "replayed 3000 of 3000" "$TMP/replay_later.log" || fail "the second replay fell short"
[ "$noqp" -ge 1500 ] || fail "only $noqp of 3000 replayed packets reached B, for no QP"
stop_both

# --- the xdp backend, authenticated ----------------------------------------------------------
start_a --set backend=xdp
start_b --set backend=xdp
started() { grep -q "$DAEMON_UP\|cannot start" "$TMP/$1.log"; }
wait_until 5 "metaroced a neither started nor gave up" started a
wait_until 5 "metaroced b neither started nor gave up" started b
if grep -q "cannot start" "$TMP/a.log" "$TMP/b.log"; then
	echo "xdp: skipped, the backend cannot attach here: $(sed -n 's/.*cannot start: //p' \
		"$TMP/a.log" "$TMP/b.log" | head -n 1)"
else
	write_verified xdp_auth
	xdp_count() { "$CTL" -S "$TMP/b.sock" -j xdp |
		python3 -c 'import json,sys; print(json.load(sys.stdin)["packets"]["'"$1"'"])'; }
	placed=$(xdp_count placed)
	# 2,000 messages of 64 KiB are at least 90,000 packets of 1,416 B
	[ "$placed" -ge 45000 ] || fail "the XDP program placed only $placed tagged packets"
	[ "$(xdp_count bad_tag)" -eq 0 ] || fail "the XDP program refused $(xdp_count bad_tag) tags"
	echo "xdp: verified, $placed packets placed by the XDP program after their tags checked"
fi
stop_both

# --- auth = full: payloads sealed -------------------------------------------------------------
# zero_run MODE: the longest run of zero bytes in the MetaRoCE datagrams leaving A during a
# WRITE transfer of zero-filled buffers (metaroce-perf without -V sends its zeroed memory):
# thousands in the clear, a few at most in ciphertext
zero_run() {
	ip netns exec "$NS_A" python3 - "${TAG}a0" 4792 >"$TMP/zero_run.$1" 2>&1 <<'PY' &
import re, socket, struct, sys, time
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(3))
s.bind((sys.argv[1], 0))
s.settimeout(0.2)
longest, frames, quiet = 0, 0, time.monotonic() + 15
while time.monotonic() < quiet:
    try:
        f, addr = s.recvfrom(65535)
    except socket.timeout:
        continue
    if addr[2] != 4 or len(f) < 42 or f[12:14] != b"\x08\x00" or f[23] != 17:
        continue
    udp = 14 + (f[14] & 15) * 4
    if struct.unpack("!H", f[udp + 2:udp + 4])[0] != int(sys.argv[2]):
        continue
    frames += 1
    quiet = time.monotonic() + 2  # until the transfer has been over for 2 s
    for run in re.findall(rb"\x00+", f[udp + 8 + 80:]):  # past every MetaRoCE header
        longest = max(longest, len(run))
print(frames, longest)
PY
	CAPTURE=$!
	PIDS="$PIDS $CAPTURE"
	capturing() { ip netns exec "$NS_A" ss -H -0 | grep -q .; }
	wait_until 5 "the capture never started" capturing
	perf_pair "zeros_$1" -e -- -t write -s 65536 -n 300 -e
	wait "$CAPTURE" || { cat "$TMP/zero_run.$1"; fail "the capture of $1"; }
	read -r frames longest <"$TMP/zero_run.$1"
	[ "$frames" -ge 300 ] || fail "$1: only $frames frames captured"
}
start_a --set auth=full
start_b --set auth=full
both_up
"$CTL" -S "$TMP/a.sock" status | grep -q "^auth full" || fail "status does not say auth full"
[ "$(metric "$TMP/b.sock" 'metaroce_auth{mode="full"}')" = 1 ] || fail "metrics hide auth full"
perf_pair sealed_write -e -- -t write -s 65536 -n 500 -V -e
json_check sealed_write 'j["messages"] == 500 and j["peer"]["verified"] == 500 and j["errors"] == 0'
perf_pair sealed_send -e -- -t send -s 16384 -n 500 -V -e
json_check sealed_send 'j["messages"] == 500 and j["peer"]["verified"] == 500 and j["errors"] == 0'
perf_pair sealed_read -e -- -t read -s 65536 -n 300 -V -e
json_check sealed_read 'j["messages"] == 300 and j["verified"] + j["peer"]["verified"] == 300 and j["errors"] == 0'
# UD datagrams sealed too, under the peer pair's keys
run_pair sealed_ud 18515 ibv_ud_pingpong -g 0 -s 1024 -n 200
grep -q " iters in " "$TMP/sealed_ud.client.log" || fail "sealed UD: no result line"
[ "$(metric "$TMP/b.sock" 'metaroce_qp_rx_dropped_total{reason="unauthenticated"}')" = 0 ] ||
	fail "B refused sealed packets of its own transfers"
zero_run full
echo "full: WRITE, SEND, READ and UD sealed; zero-filled WRITEs leave A with zero runs" \
	"of at most $longest bytes in $frames frames"
[ "$longest" -lt 64 ] || fail "auth = full: a run of $longest zero bytes left A: plaintext"
# the same capture of header mode: the zeros in the clear, so the check above can see them
stop_both
start_a
start_b
both_up
zero_run header
echo "header: the same transfer shows runs of $longest zero bytes"
[ "$longest" -ge 1024 ] || fail "header mode showed no plaintext: the capture proves nothing"
# a full daemon and a header one refuse each other's packets, whatever their keys
stop_both
start_a --set auth=full
start_b
both_up
bg_b "$TMP/mixed.server.log" timeout 8 "$PERF" -p 18799 -e
srv=$BG
on_a timeout 8 "$PERF" -p 18799 -t write -s 4096 -n 10 -e 198.18.0.2 >"$TMP/mixed.log" 2>&1 &&
	fail "a sealed daemon and an unsealed one carried a transfer"
wait "$srv"
refused_unsealed() { metric_at_least "$TMP/a.sock" 'metaroce_qp_rx_dropped_total{reason="unauthenticated"}' 1 ||
	metric_at_least "$TMP/b.sock" 'metaroce_qp_rx_dropped_total{reason="unauthenticated"}' 1; }
wait_until 5 "neither daemon counted the other's packets unauthenticated" refused_unsealed
echo "mixed: full against header refused, counted as unauthenticated"
