#!/bin/sh
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# make bench-workers: what worker threads buy one daemon. A fixed load, 8 QPs over 4 planes
# between two programs of the same host that sleep on completion channels (metaroce-perf -e),
# runs through one metaroced whose planes loop back to itself, with workers = 1, 2, ... up to
# the CPUs it may use, each RUNS times (3) in turn; the medians are reported. Goodput is what
# the client's peer verified arriving; CPU is everything the run cost the machine (daemon,
# programs, softirq), from /proc/stat. Writes BUILD/bench-workers.json: the cores, `scaling`
# (workers -> goodput over workers = 1's) and CPU seconds per GB per worker count. A report,
# not a test: the goal (>= 0.9 x min(workers, cores) until the links are full) is read here.
BUILD=${BUILD:-build}
SECONDS_EACH=${SECONDS_EACH:-5}
RUNS=${RUNS:-3}
. "$(dirname "$0")/../tests/integration/lib.sh"

CORES=$(nproc)
pin="${CPUS:+--set cpus=$CPUS} ${BUSY_POLL:+--set busy_poll=$BUSY_POLL}" # CPUS=0-3: pinned
MAX_WORKERS=${MAX_WORKERS:-$CORES}
busy() { awk '/^cpu / { print $2 + $3 + $4 + $7 + $8 }' /proc/stat; }
hz=$(getconf CLK_TCK)
: >"$TMP/runs"

# One host, four planes on veth interfaces whose peers stay in it too: the daemon reaches its
# own addresses (through the loopback).
ip netns add "$NS_A"
ip -n "$NS_A" link set lo up
for p in 0 1 2 3; do
	ip -n "$NS_A" link add "${TAG}w$p" type veth peer name "${TAG}x$p"
	ip -n "$NS_A" link set "${TAG}x$p" up
	ip -n "$NS_A" addr add "198.$((18 + p)).0.1/24" dev "${TAG}w$p"
	ip -n "$NS_A" link set "${TAG}w$p" up
done

# run WORKERS: one measurement
run() {
	# shellcheck disable=SC2086
	start_daemon "$NS_A" "w$1" --set "workers=$1" --set "control_socket=$TMP/w.sock" $pin \
		--set "plane=0 ${TAG}w0 198.18.0.1" --set "plane=1 ${TAG}w1 198.19.0.1" \
		--set "plane=2 ${TAG}w2 198.20.0.1" --set "plane=3 ${TAG}w3 198.21.0.1" \
		--set "peer_prefix=198.18.0.0/14"
	wait_for "$TMP/w$1.log" "$DAEMON_UP"
	grep -q ", $1 worker" "$TMP/w$1.log" || fail "asked for $1 workers: $(cat "$TMP/w$1.log")"
	port=$((port + 1))
	ip netns exec "$NS_A" env METAROCE_SOCKET="$TMP/w.sock" "$BUILD/bin/metaroce-run" \
		"$BUILD/bin/metaroce-perf" -p $port -e >"$TMP/server.log" 2>&1 &
	srv=$!
	PIDS="$PIDS $srv"
	b0=$(busy)
	ip netns exec "$NS_A" env METAROCE_SOCKET="$TMP/w.sock" "$BUILD/bin/metaroce-run" \
		"$BUILD/bin/metaroce-perf" -p $port -j -t write -s 64K -q 8 -Q 8 -e \
		-D "$SECONDS_EACH" 198.18.0.1 >"$TMP/client.json" 2>"$TMP/client.log" ||
		{ cat "$TMP/client.log" "$TMP/server.log"; fail "metaroce-perf, $1 workers"; }
	b1=$(busy)
	wait "$srv" || { cat "$TMP/server.log"; fail "metaroce-perf server, $1 workers"; }
	g=$(python3 -c "import json; j = json.load(open('$TMP/client.json')); print(j['gbps'])")
	echo "$1 $g $((b1 - b0))" >>"$TMP/runs"
	python3 -c "
g, ticks, secs, hz = float('$g'), $((b1 - b0)), $SECONDS_EACH, $hz
print('  workers %-3s %6.3f Gbit/s  %5.2f CPU s per GB' % ('$1', g, ticks / hz / (g * secs / 8)))"
	# how the work fell on the workers (their turns with work, their CPU)
	"$BUILD/bin/metaroce-ctl" -S "$TMP/w.sock" status | sed -n 's/^worker/    worker/p'
	eval "kill -TERM \$PID_w$1; wait \$PID_w$1" || fail "the daemon with $1 workers did not stop"
}

echo "one daemon, 4 planes looped back to itself, 8 QPs of 64 KiB WRITEs, programs on" \
     "completion channels; $CORES cores; ${SECONDS_EACH} s each, $RUNS rounds"
port=18900
round=0 # not i: lib.sh's waits use it
while [ $round -lt "$RUNS" ]; do
	w=1
	while [ $w -le "$MAX_WORKERS" ]; do
		run $w
		w=$((w + 1))
	done
	round=$((round + 1))
done
python3 - "$TMP/runs" "$SECONDS_EACH" "$hz" "$CORES" "$BUILD/bench-workers.json" <<'PY'
import json, statistics, sys
runs, secs, hz, cores, out = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), \
    int(sys.argv[4]), sys.argv[5]
got = {}
for line in open(runs):
    w, g, ticks = line.split()
    g = float(g)
    got.setdefault(w, []).append({"gbps": g, "cpu_s_per_gb": int(ticks) / hz / (g * secs / 8)})
med = {w: {"gbps": statistics.median(r["gbps"] for r in v),
           "cpu_s_per_gb": statistics.median(r["cpu_s_per_gb"] for r in v), "runs": v}
       for w, v in got.items()}
one = med["1"]["gbps"]
res = {"cores": cores, "seconds": secs, "runs": len(got["1"]),
       "load": "8 QPs, 4 planes, one daemon looped back, 64 KiB WRITEs, metaroce-perf -e",
       "scaling": {w: m["gbps"] / one for w, m in med.items()},
       "gbps": {w: m["gbps"] for w, m in med.items()},
       "cpu_s_per_gb": {w: m["cpu_s_per_gb"] for w, m in med.items()},
       "goal": {w: 0.9 * min(int(w), cores) for w in med}, "medians": med}
print("medians (%d cores):" % cores)
for w, m in med.items():
    print("  workers %-3s %6.3f Gbit/s  %5.2f CPU s per GB  scaling %.2fx (goal %.2fx)"
          % (w, m["gbps"], m["cpu_s_per_gb"], res["scaling"][w], res["goal"][w]))
json.dump(res, open(out, "w"), indent=1)
print("wrote " + out)
PY
