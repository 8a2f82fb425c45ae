#!/bin/sh
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# make demo: two hosts with two planes each, a metaroced per host, unmodified RDMA programs
# between them, and what happened. Everything lives in network namespaces this script makes
# and removes again, whatever happens (Ctrl-C included). Needs root.
#
#        host A (netns)                                     host B (netns)
#   +----------------------+      plane 0: veth       +----------------------+
#   | metaroced            |--------------------------| metaroced            |
#   |  a0 198.18.0.1/24    |                          |  b0 198.18.0.2/24    |
#   |  a1 198.19.0.1/24    |--------------------------|  b1 198.19.0.2/24    |
#   | ib_write_bw (client) |      plane 1: veth       | ib_write_bw (server) |
#   +----------------------+                          +----------------------+
#
# The programs name one address of the peer (GID 0, plane 0); the daemons discover each
# other's planes and spray every QP over 4 UDP source ports on each plane.
#
#   demo/demo.sh BUILD_DIR [SECONDS]
set -u
BUILD=${1:?usage: demo.sh BUILD_DIR [SECONDS]}
SECONDS_RUN=${2:-4}
TAG=mrcdemo$$
NS_A=${TAG}a
NS_B=${TAG}b
TMP=$(mktemp -d "${TMPDIR:-/tmp}/metaroce-demo.XXXXXX")
PIDS=""

# until_ok SECONDS COMMAND...: runs COMMAND every 0.1 s until it succeeds; false after SECONDS
until_ok() {
	n=$(($1 * 10))
	shift
	until "$@"; do
		n=$((n - 1))
		[ $n -gt 0 ] || return 1
		sleep 0.1
	done
}
all_gone() {
	for p in $PIDS; do kill -0 "$p" 2>/dev/null && return 1; done
	return 0
}

cleanup() {
	for p in $PIDS; do kill -TERM "$p" 2>/dev/null; done
	until_ok 2 all_gone || for p in $PIDS; do kill -KILL "$p" 2>/dev/null; done
	ip netns del "$NS_A" 2>/dev/null
	ip netns del "$NS_B" 2>/dev/null
	rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

say() { printf '\n== %s\n' "$*"; }
die() {
	echo "demo: $*" >&2
	for f in "$TMP"/*.log; do [ -f "$f" ] && { echo "--- $f" >&2; tail -n 15 "$f" >&2; }; done
	exit 1
}

[ "$(id -u)" -eq 0 ] || die "needs root (network namespaces); try: sudo make demo"
command -v ib_write_bw >/dev/null || die "perftest is missing; make deps installs it"

say "testbed: 2 hosts x 2 planes in network namespaces"
ip netns add "$NS_A" && ip netns add "$NS_B" || die "cannot create network namespaces"
for p in 0 1; do
	ip link add "${TAG}a$p" netns "$NS_A" type veth peer "${TAG}b$p" netns "$NS_B" ||
		die "veth for plane $p"
	ip -n "$NS_A" addr add "198.1$((8 + p)).0.1/24" dev "${TAG}a$p"
	ip -n "$NS_B" addr add "198.1$((8 + p)).0.2/24" dev "${TAG}b$p"
	ip -n "$NS_A" link set "${TAG}a$p" up
	ip -n "$NS_B" link set "${TAG}b$p" up
	echo "plane $p: ${TAG}a$p 198.1$((8 + p)).0.1 <-> ${TAG}b$p 198.1$((8 + p)).0.2"
done
ip -n "$NS_A" link set lo up
ip -n "$NS_B" link set lo up

say "metaroced on each host"
# one cluster key for both: every peer and packet authenticated (SPEC 14.6)
(umask 077 && head -c 32 /dev/urandom | base64 >"$TMP/cluster.key")
for h in a b; do
	n=$([ $h = a ] && echo 1 || echo 2)
	cat >"$TMP/$h.conf" <<EOF
# metaroced.conf for host $h (see packaging/config/metaroced.conf for every key)
plane = 0 ${TAG}${h}0 198.18.0.$n
plane = 1 ${TAG}${h}1 198.19.0.$n
paths_per_plane = 4
peer_prefix = 198.18.0.0/15
control_socket = $TMP/$h.sock
cluster_key_file = $TMP/cluster.key
key_file = $TMP/$h.key
EOF
	ns=$([ $h = a ] && echo "$NS_A" || echo "$NS_B")
	ip netns exec "$ns" "$BUILD/sbin/metaroced" -c "$TMP/$h.conf" >"$TMP/$h.log" 2>&1 &
	PIDS="$PIDS $!"
done
for h in a b; do
	# its start-up line, logged once its control socket is open
	until_ok 5 grep -q "node [0-9a-f]*: backend " "$TMP/$h.log" || die "metaroced on host $h did not start"
done
cat "$TMP/a.conf"
"$BUILD/bin/metaroce-ctl" -S "$TMP/a.sock" status

run_a() { ip netns exec "$NS_A" env METAROCE_SOCKET="$TMP/a.sock" "$BUILD/bin/metaroce-run" "$@"; }
run_b() { ip netns exec "$NS_B" env METAROCE_SOCKET="$TMP/b.sock" "$BUILD/bin/metaroce-run" "$@"; }

say "RDMA WRITE for ${SECONDS_RUN}s: perftest's ib_write_bw, unmodified, through metaroce-run"
echo "B: metaroce-run ib_write_bw -d metaroce0 -x 0 -s 1048576 -D $SECONDS_RUN"
echo "A: metaroce-run ib_write_bw -d metaroce0 -x 0 -s 1048576 -D $SECONDS_RUN 198.18.0.2"
ip netns exec "$NS_B" env METAROCE_SOCKET="$TMP/b.sock" "$BUILD/bin/metaroce-run" \
	ib_write_bw -d metaroce0 -x 0 -F -s 1048576 -D "$SECONDS_RUN" >"$TMP/server.log" 2>&1 &
srv=$!
PIDS="$PIDS $srv"
listening() { ip netns exec "$NS_B" ss -Hltn "sport = :18515" | grep -q .; }
until_ok 10 listening || die "ib_write_bw on B does not listen" # its client tries once
ip netns exec "$NS_A" env METAROCE_SOCKET="$TMP/a.sock" "$BUILD/bin/metaroce-run" \
	ib_write_bw -d metaroce0 -x 0 -F -s 1048576 -D "$SECONDS_RUN" 198.18.0.2 \
	>"$TMP/client.log" 2>&1 &
cli=$!
PIDS="$PIDS $cli"
# the QP exists while the transfer runs: once it sends, look at it from host A halfway through
# (that sleep is the point: the paths' shares of the packets are taken over half the run)
sending() {
	"$BUILD/bin/metaroce-ctl" -S "$TMP/a.sock" -j qp | python3 -c '
import json, sys
sys.exit(not any(q["state"] == "rts" and q["tx_packets"] > 0 for q in json.load(sys.stdin)["qps"]))'
}
until_ok 10 sending || die "ib_write_bw's QP never sent"
sleep $((SECONDS_RUN / 2))
"$BUILD/bin/metaroce-ctl" -S "$TMP/a.sock" -j path >"$TMP/paths.json"
"$BUILD/bin/metaroce-ctl" -S "$TMP/a.sock" qp show
"$BUILD/bin/metaroce-ctl" -S "$TMP/a.sock" path show
wait "$cli" || die "ib_write_bw client failed"
wait "$srv" || die "ib_write_bw server failed"
grep -A 1 '#bytes' "$TMP/client.log"

say "byte-exact check: every RC opcode, 1 B to 16 MiB, unaligned (tests/verbs/verbs_check)"
run_b "$BUILD/tests/verbs/verbs_check" >"$TMP/check.server.log" 2>&1 &
csrv=$!
PIDS="$PIDS $csrv"
run_a "$BUILD/tests/verbs/verbs_check" 198.18.0.2 >"$TMP/check.client.log" 2>&1 ||
	die "verbs_check failed"
wait "$csrv" || die "verbs_check server failed"
grep -v '^verbs_check: client on' "$TMP/check.client.log"
# what each daemon runs: the backend it chose, and how the kernel let XDP attach
for h in a b; do
	"$BUILD/bin/metaroce-ctl" -S "$TMP/$h.sock" -j status >"$TMP/$h.status.json"
	"$BUILD/bin/metaroce-ctl" -S "$TMP/$h.sock" -j xdp >"$TMP/$h.xdp.json"
done

say "what happened"
python3 - "$TMP/client.log" "$TMP/paths.json" "$TMP/check.client.log" "$SECONDS_RUN" "$TMP" <<'PY'
import json, re, sys
bw_log, paths_json, check_log, secs = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
tmp = sys.argv[5]
row = None
for line in open(bw_log):
    f = line.split()
    if len(f) >= 4 and f[0] == "1048576":
        row = f
avg_mbs = float(row[3])  # perftest's MB is 2^20 bytes
moved = avg_mbs * 2**20 * secs
paths = json.load(open(paths_json))["paths"]
per_plane = {}
for p in paths:
    per_plane[p["plane"]] = per_plane.get(p["plane"], 0) + p["tx_packets"]
total = sum(per_plane.values()) or 1
check = re.search(r"OK: (\d+) operations, (\d+) bytes verified", open(check_log).read())
print(f"  transfer   ib_write_bw (perftest, unmodified), 1 MiB RDMA WRITEs for {secs:g} s")
print(f"  moved      {moved / 2**20:.0f} MiB, goodput {avg_mbs * 2**20 * 8 / 1e9:.2f} Gbit/s "
      f"(perftest's average)")
print(f"  paths      {len(paths)} ({sum(1 for p in paths if p['state'] == 'up')} up) over "
      f"{len(per_plane)} planes: " + ", ".join(f"plane {k} {100 * v / total:.0f}% of packets"
                                             for k, v in sorted(per_plane.items())))
print(f"  verified   {check.group(1)} operations, {int(check.group(2)) / 1e6:.1f} MB byte-exact")
for i, h in enumerate("ab"):
    status = json.load(open(f"{tmp}/{h}.status.json"))
    xdp = json.load(open(f"{tmp}/{h}.xdp.json"))
    if status["backend"] == "xdp":
        how = ", ".join(f"{p['ifname']} {p['xdp']}" for p in xdp["planes"])
        how = f"xdp ({how}; AF_XDP sockets {xdp['af_xdp']['sockets']})"
    else:
        how = status["backend"] + (f" ({status['backend_note']})" if status["backend_note"] else "")
    print(f"  {'backend' if i == 0 else '':10} {h.upper()}: {how}")
PY
say "teardown: daemons stopped, namespaces and links deleted"
