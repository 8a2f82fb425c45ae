# UD QPs (SPEC 4.8) between two metaroced, with unmodified programs: ibv_ud_pingpong from
# ibverbs-utils (address handles from the peer's GID, 40-byte GRH at each receive) and
# perftest's ib_send_bw / ib_send_lat -c UD; one QP's datagrams to one destination keep to
# one plane, so they arrive in order [R-524], and none is dropped on a clean link.
. "$(dirname "$0")/lib.sh"

command -v ibv_ud_pingpong >/dev/null || fail "ibv_ud_pingpong missing (ibverbs-utils: make deps)"
command -v ib_send_bw >/dev/null || fail "ib_send_bw missing (perftest: make deps)"
two_daemons

# pingpong_pair NAME ARGS...: the server on B, the client on A, both unmodified
pingpong_pair() {
	name=$1
	shift
	run_pair "$name" 18515 ibv_ud_pingpong -g 0 "$@"
	grep -q " iters in " "$TMP/$name.client.log" || fail "$name: no result line (client)"
	grep -q " iters in " "$TMP/$name.server.log" || fail "$name: no result line (server)"
	echo "$name: $(grep ' iters in ' "$TMP/$name.client.log")"
}
pingpong_pair ud_pingpong -s 1024 -n 1000
pingpong_pair ud_pingpong_events -s 64 -n 200 -e

# tx_bytes PLANE: what host A's interface of that plane sent so far (bytes: UDP GSO trains
# cross the veth as one packet each)
tx_bytes() {
	ip netns exec "$NS_A" cat "/sys/class/net/${TAG}a$1/statistics/tx_bytes"
}
metric() {
	"$BUILD/bin/metaroce-ctl" -S "$TMP/$1.sock" metrics | awk -v n="$2" '$1 == n {print $2}'
}

# perftest_pair PROGRAM RESULT: PROGRAM -c UD over 1000 iterations, the server on B, the
# client on A, both unmodified; RESULT is the start of the client's result line
perftest_pair() {
	run_pair "$1" 18515 "$1" -d metaroce0 -x 0 -c UD -F -n 1000
	grep -E "^ $2 +1000 " "$TMP/$1.client.log" || fail "$1 -c UD: no result line"
}

# 1000 datagrams of 1024 bytes, every receive posted before the first (RX depth = -n)
p0=$(tx_bytes 0)
p1=$(tx_bytes 1)
perftest_pair ib_send_bw 1024
d0=$(($(tx_bytes 0) - p0))
d1=$(($(tx_bytes 1) - p1))
echo "plane 0 sent $d0 bytes, plane 1 sent $d1 (1000 datagrams of 1024 and perftest's exchange)"
# one flow: all its datagrams (1 MB) on one plane; the other carries at most perftest's own
# TCP exchange, which runs on plane 0
{ [ "$d0" -ge 1000000 ] && [ "$d1" -lt 100000 ]; } ||
	{ [ "$d1" -ge 1000000 ] && [ "$d0" -lt 200000 ]; } ||
	fail "one QP's datagrams to one destination not on one plane: $d0 and $d1 bytes [R-524]"
perftest_pair ib_send_lat 2

for reason in no_qp qp_state not_admitted qkey no_receive too_long unroutable; do
	n=$(metric b "metaroce_ud_dropped_total{reason=\"$reason\"}")
	[ "$n" = 0 ] || fail "host B dropped $n UD datagrams for $reason on a clean link"
done
rx=$(metric b 'metaroce_ud_datagrams_total{direction="rx"}')
echo "host B delivered $rx UD datagrams, dropped none"
[ "$rx" -ge 3200 ] || fail "host B delivered only $rx UD datagrams"
