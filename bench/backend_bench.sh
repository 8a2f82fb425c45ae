#!/bin/sh
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# make bench-backend: goodput and CPU per GB on one veth pair per plane between two network
# namespaces (tests/integration/lib.sh's two hosts), no loss, no rate limit: metaroce-perf
# WRITEs over the xdp backend, over the udp backend, and one iperf3 TCP stream on plane 0.
# The three take turns RUNS times (3) and the medians are reported; CPU is everything the run
# cost both hosts (daemons, clients, softirq), from /proc/stat. Writes BUILD/bench-backend.json
# (xdp_goodput_ratio, xdp_cpu_ratio, xdp_vs_udp, and the same for udp). A report, not a test.
BUILD=${BUILD:-build}
SECONDS_EACH=${SECONDS_EACH:-5}
RUNS=${RUNS:-3}
. "$(dirname "$0")/../tests/integration/lib.sh"

busy() { awk '/^cpu / { print $2 + $3 + $4 + $7 + $8 }' /proc/stat; }
hz=$(getconf CLK_TCK)
: >"$TMP/runs"

# record KIND GBITS BUSY_TICKS
record() {
	echo "$1 $2 $3" >>"$TMP/runs"
	python3 -c "
g, ticks, secs, hz = float('$2'), int('$3'), $SECONDS_EACH, $hz
gb = g * secs / 8
print('  %-26s %6.3f Gbit/s  %5.2f CPU s per GB' % ('$1', g, ticks / hz / gb if gb else float('nan')))"
}

metaroce_run() {
	backend=$1
	two_daemons --set backend="$backend"
	# what ran is what the daemon says, not what was asked
	ran=$(ctl_json "$TMP/a.sock" status 'j["backend"]')
	[ "$ran" = "$backend" ] || fail "asked for backend $backend, the daemon runs $ran"
	b0=$(busy)
	perf_pair "$backend" -e -- -t write -s 1M -q 2 -Q 4 -D "$SECONDS_EACH" -e
	b1=$(busy)
	g=$(python3 -c "import json; print(json.load(open('$TMP/$backend.json'))['gbps'])")
	record "$backend" "$g" $((b1 - b0))
	kill -TERM "$PID_a" "$PID_b"
	wait "$PID_a" "$PID_b" 2>/dev/null
	ip netns del "$NS_A"
	ip netns del "$NS_B"
}

tcp_run() {
	two_hosts
	ip netns exec "$NS_B" iperf3 -s -1 -B 198.18.0.2 >/dev/null 2>&1 &
	PIDS="$PIDS $!"
	wait_listening "$NS_B" 5201
	b0=$(busy)
	g=$(ip netns exec "$NS_A" iperf3 -c 198.18.0.2 -t "$SECONDS_EACH" -J |
		python3 -c 'import json,sys; print(json.load(sys.stdin)["end"]["sum_received"]["bits_per_second"] / 1e9)')
	b1=$(busy)
	record tcp "$g" $((b1 - b0))
	ip netns del "$NS_A"
	ip netns del "$NS_B"
}

echo "one veth pair per plane, 2 planes, MTU 1500, no loss, ${SECONDS_EACH} s each, $RUNS rounds"
round=0 # not i: lib.sh's waits use it
while [ $round -lt "$RUNS" ]; do
	metaroce_run xdp
	metaroce_run udp
	tcp_run
	round=$((round + 1))
done
python3 - "$TMP/runs" "$SECONDS_EACH" "$hz" "$BUILD/bench-backend.json" <<'PY'
import json, statistics, sys
runs, secs, hz, out = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
got = {}
for line in open(runs):
    kind, g, ticks = line.split()
    g = float(g)
    gb = g * secs / 8
    got.setdefault(kind, []).append({"gbps": g, "cpu_s_per_gb": int(ticks) / hz / gb if gb else None})
med = {k: {"gbps": statistics.median(r["gbps"] for r in v),
           "cpu_s_per_gb": statistics.median(r["cpu_s_per_gb"] for r in v if r["cpu_s_per_gb"]),
           "runs": v} for k, v in got.items()}
res = {"seconds": secs, "runs": len(got["tcp"]), "xdp": med["xdp"], "udp": med["udp"],
       "tcp": med["tcp"]}
for b in ("xdp", "udp"):
    res[b + "_goodput_ratio"] = med[b]["gbps"] / med["tcp"]["gbps"]
    res[b + "_cpu_ratio"] = med[b]["cpu_s_per_gb"] / med["tcp"]["cpu_s_per_gb"]
res["xdp_vs_udp"] = med["xdp"]["gbps"] / med["udp"]["gbps"]
print("medians:")
for k, name in (("xdp", "metaroce, xdp backend"), ("udp", "metaroce, udp backend"),
                ("tcp", "iperf3 TCP, one stream")):
    print("  %-26s %6.3f Gbit/s  %5.2f CPU s per GB" % (name, med[k]["gbps"], med[k]["cpu_s_per_gb"]))
print("  xdp / TCP: %.2fx goodput, %.2fx CPU per GB; udp / TCP: %.2fx, %.2fx; xdp / udp: %.2fx"
      % (res["xdp_goodput_ratio"], res["xdp_cpu_ratio"], res["udp_goodput_ratio"],
         res["udp_cpu_ratio"], res["xdp_vs_udp"]))
json.dump(res, open(out, "w"), indent=1)
print("wrote " + out)
PY
