# UCX over metaroced, unmodified (Debian's UCX 1.13): ucx_perftest between two hosts on UCT's
# rc_verbs (put, get, active messages, fetch-and-add) and ud_verbs (active messages), and on
# UCP's tag matching over rc_verbs with ud_verbs for its wire-up, each run to its end; and
# tests/ucx/ucp_check, UCX's own API with every byte checked, over rc_verbs and ud_verbs.
#
# Two things UCX asks of a device beyond the verbs, both found and documented in the README:
# /dev/infiniband/<dev_name> must be a character device (packaging/tmpfiles/metaroce.conf
# makes it, and this test applies that file, removing what it made), and it asks for 5
# scatter elements per send where this device offers 4 (UCX_IB_TX_MIN_SGE=3).
. "$(dirname "$0")/lib.sh"

command -v ucx_perftest >/dev/null || fail "ucx_perftest missing (ucx-utils: make deps)"
command -v systemd-tmpfiles >/dev/null || fail "systemd-tmpfiles missing (systemd)"
SRC=$(cd "$(dirname "$0")/../.." && pwd)
NODE=/dev/infiniband/uverbs-metaroce
made_dir=
made_node=
[ -d /dev/infiniband ] || made_dir=1
[ -e "$NODE" ] || made_node=1
forget_node() {
	[ -z "$made_node" ] || rm -f "$NODE"
	[ -z "$made_dir" ] || rmdir /dev/infiniband 2>/dev/null
	cleanup
}
trap forget_node EXIT INT TERM
systemd-tmpfiles --create "$SRC/packaging/tmpfiles/metaroce.conf" || fail "tmpfiles"
[ -c "$NODE" ] || fail "$NODE is not a character device after systemd-tmpfiles"
two_daemons
export UCX_IB_TX_MIN_SGE=3

# perf NAME ARGS...: ucx_perftest ARGS, the server on B, the client on A; both must end well
# and the client print its final figures
perf() {
	name=$1
	shift
	run_pair "$name" 13337 ucx_perftest "$@"
	final=$(grep '^Final:' "$TMP/$name.client.log") ||
		{ cat "$TMP/$name.client.log"; fail "$name: no final figures"; }
	echo "$name: $final"
}

# the device is listed, with both transports
on_a ucx_info -d >"$TMP/info.log" 2>&1 || { cat "$TMP/info.log"; fail "ucx_info -d"; }
for tl in rc_verbs ud_verbs; do
	grep -A2 "Transport: $tl" "$TMP/info.log" | grep -q "Device: metaroce0:1" ||
		{ cat "$TMP/info.log"; fail "ucx_info -d does not list $tl on metaroce0:1"; }
done

rc="-d metaroce0:1 -x rc_verbs"
ud="-d metaroce0:1 -x ud_verbs"
# columns of "Final:": iterations, latency or overhead (50th percentile, average, overall)
# in microseconds, bandwidth (average, overall) in MB/s, message rate (average, overall)
perf put_bw $rc -t put_bw -D zcopy -s 65536 -n 2000 -w 100
perf get $rc -t get -D zcopy -s 65536 -n 1000 -w 100
perf am_lat $rc -t am_lat -n 1000 -w 100
perf am_bw $rc -t am_bw -D zcopy -s 8000 -n 2000 -w 100
perf fadd $rc -t fadd -n 1000 -w 100
perf ud_am_lat $ud -t am_lat -n 1000 -w 100
perf ud_am_bw $ud -t am_bw -D bcopy -s 1000 -n 10000 -w 100
# UCP: rc_verbs for the data, ud_verbs to wire it up ("rc_v"), metaroce0 alone
export UCX_NET_DEVICES=metaroce0:1 UCX_TLS=rc_v
perf ucp_tag_bw -t tag_bw -s 1000000 -n 200 -w 10

# UCX's own API with every byte checked (ucx_perftest checks none): tagged messages of 1 B to
# 1 MiB echoed back, 4 MiB put into the server's memory and read back, which the server
# checks too; over rc_verbs, then over ud_verbs alone
for tls in rc_v ud_v; do
	export UCX_TLS=$tls
	run_pair "ucp.$tls" 13400 "$BUILD/tests/ucx/ucp_check" -p 13400 -n 10
	grep -q "ucp_check: OK" "$TMP/ucp.$tls.server.log" ||
		{ cat "$TMP/ucp.$tls.server.log"; fail "ucp_check server over $tls: not OK"; }
	echo "$tls: $(grep 'transfers checked' "$TMP/ucp.$tls.client.log")"
done
