#!/bin/sh
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# One connection over one veth pair between two network namespaces, in one run: kernel TCP
# (iperf3) and MetaRoCE over the udp backend, the whole stack: a metaroced on each side and
# perftest's ib_write_bw (1 MiB RDMA WRITEs) through libmetaroce. Prints goodput, CPU seconds
# per GB moved (user + system of everything involved: both iperf3s; both daemons and both
# ib_write_bws) and the ratios. Root, iproute2, iperf3, perftest.
#
#   bench/udp_vs_tcp.sh BUILD_DIR [MTU] [SECONDS]
set -eu
build=${1:?usage: udp_vs_tcp.sh BUILD_DIR [MTU] [SECONDS]}
mtu=${2:-9000}
secs=${3:-10}
tag=mrcb$$
tmp=$(mktemp -d)
pids=""
cleanup() {
	for p in $pids; do kill -KILL "$p" 2>/dev/null || true; done
	ip netns del ${tag}a 2>/dev/null || true
	ip netns del ${tag}b 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT INT TERM
command -v iperf3 >/dev/null || { echo "iperf3 is not installed (make deps)"; exit 1; }
command -v ib_write_bw >/dev/null || { echo "perftest is not installed (make deps)"; exit 1; }
ip netns add ${tag}a
ip netns add ${tag}b
ip link add ${tag}a netns ${tag}a mtu "$mtu" type veth peer ${tag}b netns ${tag}b mtu "$mtu"
ip -n ${tag}a addr add 198.18.0.1/24 dev ${tag}a
ip -n ${tag}b addr add 198.18.0.2/24 dev ${tag}b
for n in a b; do ip -n ${tag}$n link set ${tag}$n up; ip -n ${tag}$n link set lo up; done

# user + system seconds of a running process, from /proc
cpu_of() { awk -v hz="$(getconf CLK_TCK)" '{printf "%.3f", ($14 + $15) / hz}' "/proc/$1/stat"; }

# kernel TCP
ip netns exec ${tag}b /usr/bin/time -f "%U %S" -o "$tmp/tcp_srv.time" iperf3 -s -1 -p 5201 \
	>/dev/null 2>&1 &
srv=$!
sleep 0.5
ip netns exec ${tag}a /usr/bin/time -f "%U %S" -o "$tmp/tcp_cli.time" iperf3 -c 198.18.0.2 \
	-p 5201 -t "$secs" -J >"$tmp/tcp.json"
wait $srv
tcp=$(python3 -c 'import json,sys; e=json.load(open(sys.argv[1]))["end"]; print(e["sum_received"]["bits_per_second"]/1e9, e["sum_received"]["bytes"])' "$tmp/tcp.json")
tcp_cpu=$(cat "$tmp/tcp_srv.time" "$tmp/tcp_cli.time" | awk '{s += $1 + $2} END {printf "%.3f", s}')

# MetaRoCE: a daemon per side, ib_write_bw through libmetaroce
for n in a b; do
	addr=198.18.0.$([ $n = a ] && echo 1 || echo 2)
	ip netns exec ${tag}$n "$build/sbin/metaroced" --set "plane=0 ${tag}$n $addr" \
		--set "mtu=$mtu" --set "peer_prefix=198.18.0.0/24" \
		--set "control_socket=$tmp/$n.sock" >"$tmp/$n.log" 2>&1 &
	pids="$pids $!"
	eval "daemon_$n=$!"
done
sleep 0.5
cpu0=$(echo "$(cpu_of "$daemon_a") $(cpu_of "$daemon_b")" | awk '{print $1 + $2}')
ip netns exec ${tag}b env METAROCE_SOCKET="$tmp/b.sock" /usr/bin/time -f "%U %S" \
	-o "$tmp/mrc_srv.time" "$build/bin/metaroce-run" ib_write_bw -d metaroce0 -x 0 -F \
	-s 1048576 -D "$secs" >"$tmp/mrc_srv.out" 2>&1 &
srv=$!
sleep 0.5
ip netns exec ${tag}a env METAROCE_SOCKET="$tmp/a.sock" /usr/bin/time -f "%U %S" \
	-o "$tmp/mrc_cli.time" "$build/bin/metaroce-run" ib_write_bw -d metaroce0 -x 0 -F \
	-s 1048576 -D "$secs" 198.18.0.2 >"$tmp/mrc_cli.out" 2>&1
wait $srv
cpu1=$(echo "$(cpu_of "$daemon_a") $(cpu_of "$daemon_b")" | awk '{print $1 + $2}')
mrc_mbs=$(awk '$1 == "1048576" {print $4}' "$tmp/mrc_cli.out")
[ -n "$mrc_mbs" ] || { cat "$tmp/mrc_cli.out" "$tmp/a.log"; exit 1; }
mrc_cpu=$(cat "$tmp/mrc_srv.time" "$tmp/mrc_cli.time" | awk -v d="$cpu1" -v d0="$cpu0" \
	'{s += $1 + $2} END {printf "%.3f", s + d - d0}')

python3 - $tcp "$tcp_cpu" "$mrc_mbs" "$mrc_cpu" "$mtu" "$secs" <<'PY'
import sys
tcp_g, tcp_bytes, tcp_c, mrc_mbs, mrc_c, mtu, secs = map(float, sys.argv[1:])
mrc_g = mrc_mbs * 2**20 * 8 / 1e9             # perftest's MB is 2^20 bytes
mrc_bytes = mrc_mbs * 2**20 * secs
tcp_gb, mrc_gb = tcp_bytes / 1e9, mrc_bytes / 1e9
print("one connection over one veth pair, MTU %d, %g s each" % (mtu, secs))
print("  %-44s %8s %14s" % ("", "Gbit/s", "CPU s per GB"))
print("  %-44s %8.2f %14.3f" % ("kernel TCP (iperf3)", tcp_g, tcp_c / tcp_gb))
print("  %-44s %8.2f %14.3f" % ("MetaRoCE, udp backend (metaroced+ib_write_bw)", mrc_g,
                                  mrc_c / mrc_gb))
print("  %-44s %7.2fx %13.2fx" % ("MetaRoCE / TCP", mrc_g / tcp_g, (mrc_c / mrc_gb) / (tcp_c / tcp_gb)))
PY
