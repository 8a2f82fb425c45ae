#!/bin/sh
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# make bench-backend: goodput and CPU per GB on one veth pair per plane between two network
# namespaces (tests/integration/lib.sh's two hosts), no loss, no rate limit: metaroce-perf
# WRITEs over the xdp backend, over the udp backend, and one iperf3 TCP stream, one run each.
# CPU is everything the run cost both hosts (daemons, clients, softirq), from /proc/stat.
# A report, not a test: nothing here passes or fails.
BUILD=${BUILD:-build}
SECONDS_EACH=${SECONDS_EACH:-5}
. "$(dirname "$0")/../tests/integration/lib.sh"

busy() { awk '/^cpu / { print $2 + $3 + $4 + $7 + $8 }' /proc/stat; }
hz=$(getconf CLK_TCK)

# report NAME GBITS BUSY_TICKS
report() {
	python3 -c "
g, ticks, secs, hz = float('$2'), int('$3'), $SECONDS_EACH, $hz
gb = g * secs / 8
print('%-28s %6.3f Gbit/s  %5.2f CPU s per GB' % ('$1', g, ticks / hz / gb if gb else float('nan')))"
}

metaroce_run() {
	backend=$1
	two_daemons --set backend="$backend"
	b0=$(busy)
	perf_pair "$backend" -e -- -t write -s 1M -q 2 -Q 4 -D "$SECONDS_EACH" -e
	b1=$(busy)
	g=$(python3 -c "import json; print(json.load(open('$TMP/$backend.json'))['gbps'])")
	report "metaroce, $backend backend" "$g" $((b1 - b0))
	kill -TERM "$PID_a" "$PID_b"
	wait "$PID_a" "$PID_b" 2>/dev/null
	ip netns del "$NS_A"
	ip netns del "$NS_B"
}

echo "one veth pair per plane, 2 planes, MTU 1500, no loss, ${SECONDS_EACH} s each"
metaroce_run xdp
metaroce_run udp
two_hosts
ip netns exec "$NS_B" iperf3 -s -1 -B 198.18.0.2 >/dev/null 2>&1 &
PIDS="$PIDS $!"
sleep 0.3
b0=$(busy)
g=$(ip netns exec "$NS_A" iperf3 -c 198.18.0.2 -t "$SECONDS_EACH" -J |
	python3 -c 'import json,sys; print(json.load(sys.stdin)["end"]["sum_received"]["bits_per_second"] / 1e9)')
b1=$(busy)
report "iperf3 TCP, one stream" "$g" $((b1 - b0))
