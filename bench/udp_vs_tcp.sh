#!/bin/sh
# One connection over one veth pair between two network namespaces, in one run: kernel TCP
# (iperf3) and MetaRoCE over the udp backend (bench/udp_transfer.c). Prints goodput, CPU
# seconds per GB moved (both ends, user + system) and the ratios. Root, iproute2, iperf3.
#
#   bench/udp_vs_tcp.sh BUILD_DIR [MTU] [BYTES]
#
# VERIFY=verify makes the MetaRoCE receiver check every byte (it then costs more CPU than
# iperf3's receiver, which checks nothing, so the measured runs leave it off).
set -eu
build=${1:?usage: udp_vs_tcp.sh BUILD_DIR [MTU] [BYTES]}
mtu=${2:-9000}
bytes=${3:-4294967296}
tag=mrcb$$
tmp=$(mktemp -d)
cleanup() {
	ip netns del ${tag}a 2>/dev/null || true
	ip netns del ${tag}b 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT INT TERM
command -v iperf3 >/dev/null || { echo "iperf3 is not installed (make deps)"; exit 1; }
ip netns add ${tag}a
ip netns add ${tag}b
ip link add ${tag}a netns ${tag}a mtu "$mtu" type veth peer ${tag}b netns ${tag}b mtu "$mtu"
ip -n ${tag}a addr add 198.18.0.1/24 dev ${tag}a
ip -n ${tag}b addr add 198.18.0.2/24 dev ${tag}b
for n in a b; do ip -n ${tag}$n link set ${tag}$n up; ip -n ${tag}$n link set lo up; done

# kernel TCP: iperf3 for the time MetaRoCE will need is unknown, so a fixed byte count
ip netns exec ${tag}b /usr/bin/time -f "%U %S" -o "$tmp/tcp_srv.time" iperf3 -s -1 -p 5201 \
	>/dev/null 2>&1 &
srv=$!
sleep 0.5
ip netns exec ${tag}a /usr/bin/time -f "%U %S" -o "$tmp/tcp_cli.time" iperf3 -c 198.18.0.2 \
	-p 5201 -n "$bytes" -J >"$tmp/tcp.json"
wait $srv
tcp_gbps=$(python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); print("%.2f" % (j["end"]["sum_received"]["bits_per_second"]/1e9))' "$tmp/tcp.json")
tcp_cpu=$(cat "$tmp/tcp_srv.time" "$tmp/tcp_cli.time" | awk '{s += $1 + $2} END {printf "%.3f", s}')

# MetaRoCE, udp backend
ip netns exec ${tag}b /usr/bin/time -f "%U %S" -o "$tmp/mrc_rcv.time" \
	"$build/bench/udp-transfer" recv 198.18.0.2 198.18.0.1 "$bytes" ${VERIFY:-} >"$tmp/mrc_rcv.out" &
rcv=$!
sleep 0.3
ip netns exec ${tag}a /usr/bin/time -f "%U %S" -o "$tmp/mrc_snd.time" \
	"$build/bench/udp-transfer" send 198.18.0.1 198.18.0.2 "$bytes" >"$tmp/mrc_snd.out"
wait $rcv
mrc_gbps=$(awk '{print $6}' "$tmp/mrc_rcv.out")
mrc_cpu=$(cat "$tmp/mrc_rcv.time" "$tmp/mrc_snd.time" | awk '{s += $1 + $2} END {printf "%.3f", s}')

gb=$(python3 -c "print($bytes / 1e9)")
python3 - "$tcp_gbps" "$tcp_cpu" "$mrc_gbps" "$mrc_cpu" "$gb" "$mtu" <<'PY'
import sys
tcp_g, tcp_c, mrc_g, mrc_c, gb, mtu = map(float, sys.argv[1:])
print("one connection over one veth pair, MTU %d, %.2f GB moved" % (mtu, gb))
print("  %-26s %10s %18s" % ("", "Gbit/s", "CPU s per GB"))
print("  %-26s %10.2f %18.3f" % ("kernel TCP (iperf3)", tcp_g, tcp_c / gb))
print("  %-26s %10.2f %18.3f" % ("MetaRoCE, udp backend", mrc_g, mrc_c / gb))
print("  %-26s %9.2fx %17.2fx" % ("MetaRoCE / TCP", mrc_g / tcp_g, (mrc_c / gb) / (tcp_c / gb)))
PY
