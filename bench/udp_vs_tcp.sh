#!/bin/sh
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# One connection over one veth pair between two network namespaces, in one run: kernel TCP
# (iperf3) and MetaRoCE over the udp backend, the whole stack: a metaroced on each side and
# perftest's ib_write_bw (1 MiB RDMA WRITEs) through libmetaroce. Prints goodput, CPU seconds
# per GB moved (user + system of everything involved: both iperf3s; both daemons and both
# ib_write_bws) and the ratios. Root, iproute2, iperf3, perftest.
#
# ib_write_bw spins on its completion queue, a core's worth of CPU whatever the transport
# does, where iperf3 sleeps in the kernel; so the CPU is also split into the daemons' and the
# programs', and a third run moves the same WRITEs with metaroce-perf sleeping on a completion
# channel (-e), as iperf3 sleeps.
#
# Each is run RUNS times (3), alternating, and the medians are reported; writes
# BUILD_DIR/bench-udp-vs-tcp.json with goodput_ratio and cpu_ratio (ib_write_bw's / TCP), the
# daemons' and programs' shares, and cpu_ratio_sleeping (metaroce-perf -e / TCP).
#
#   [DAEMON_SET=key=value] bench/udp_vs_tcp.sh BUILD_DIR [MTU] [SECONDS] [RUNS]
# (DAEMON_SET: one more setting for both daemons, e.g. udp_gso=no for a before/after)
set -eu
build=${1:?usage: udp_vs_tcp.sh BUILD_DIR [MTU] [SECONDS] [RUNS]}
mtu=${2:-9000}
secs=${3:-10}
runs=${4:-3}
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

# one kernel TCP run: "GBIT/S BYTES CPU_SECONDS" on stdout
tcp_run() {
	ip netns exec ${tag}b /usr/bin/time -f "%U %S" -o "$tmp/tcp_srv.time" iperf3 -s -1 \
		-p 5201 >/dev/null 2>&1 &
	srv=$!
	until ip netns exec ${tag}b ss -Hltn "sport = :5201" | grep -q .; do sleep 0.05; done
	ip netns exec ${tag}a /usr/bin/time -f "%U %S" -o "$tmp/tcp_cli.time" iperf3 -c 198.18.0.2 \
		-p 5201 -t "$secs" -J >"$tmp/tcp.json"
	wait $srv
	python3 -c 'import json,sys; e=json.load(open(sys.argv[1]))["end"]; print(e["sum_received"]["bits_per_second"]/1e9, e["sum_received"]["bytes"], end=" ")' "$tmp/tcp.json"
	cat "$tmp/tcp_srv.time" "$tmp/tcp_cli.time" | awk '{s += $1 + $2} END {printf "%.3f\n", s}'
}

# MetaRoCE: a daemon per side (started once), ib_write_bw through libmetaroce
for n in a b; do
	addr=198.18.0.$([ $n = a ] && echo 1 || echo 2)
	ip netns exec ${tag}$n "$build/sbin/metaroced" --set "plane=0 ${tag}$n $addr" \
		--set "mtu=$mtu" --set "peer_prefix=198.18.0.0/24" --set backend=udp \
		--set "control_socket=$tmp/$n.sock" ${DAEMON_SET:+--set "$DAEMON_SET"} \
		>"$tmp/$n.log" 2>&1 &
	pids="$pids $!"
	eval "daemon_$n=$!"
done
for n in a b; do
	until grep -q "backend " "$tmp/$n.log" && [ -S "$tmp/$n.sock" ]; do sleep 0.05; done
done

# one MetaRoCE run: "GBIT/S BYTES CPU_SECONDS DAEMON_CPU_SECONDS" (both ib_write_bws and both
# daemons)
mrc_run() {
	cpu0=$(echo "$(cpu_of "$daemon_a") $(cpu_of "$daemon_b")" | awk '{print $1 + $2}')
	ip netns exec ${tag}b env METAROCE_SOCKET="$tmp/b.sock" /usr/bin/time -f "%U %S" \
		-o "$tmp/mrc_srv.time" "$build/bin/metaroce-run" ib_write_bw -d metaroce0 -x 0 -F \
		-s 1048576 -D "$secs" >"$tmp/mrc_srv.out" 2>&1 &
	srv=$!
	until ip netns exec ${tag}b ss -Hltn "sport = :18515" | grep -q .; do sleep 0.05; done
	ip netns exec ${tag}a env METAROCE_SOCKET="$tmp/a.sock" /usr/bin/time -f "%U %S" \
		-o "$tmp/mrc_cli.time" "$build/bin/metaroce-run" ib_write_bw -d metaroce0 -x 0 -F \
		-s 1048576 -D "$secs" 198.18.0.2 >"$tmp/mrc_cli.out" 2>&1
	wait $srv
	cpu1=$(echo "$(cpu_of "$daemon_a") $(cpu_of "$daemon_b")" | awk '{print $1 + $2}')
	mbs=$(awk '$1 == "1048576" {print $4}' "$tmp/mrc_cli.out")
	[ -n "$mbs" ] || { cat "$tmp/mrc_cli.out" "$tmp/a.log" >&2; exit 1; }
	cat "$tmp/mrc_srv.time" "$tmp/mrc_cli.time" | awk -v d="$cpu1" -v d0="$cpu0" \
		-v mbs="$mbs" -v secs="$secs" '{s += $1 + $2}
		END {printf "%.4f %.0f %.3f %.3f\n", mbs * 1048576 * 8 / 1e9, mbs * 1048576 * secs,
		     s + d - d0, d - d0}'
}

# the same WRITEs from metaroce-perf sleeping on a completion channel: the same fields
port=18700
sleeping_run() {
	port=$((port + 1))
	cpu0=$(echo "$(cpu_of "$daemon_a") $(cpu_of "$daemon_b")" | awk '{print $1 + $2}')
	ip netns exec ${tag}b env METAROCE_SOCKET="$tmp/b.sock" /usr/bin/time -f "%U %S" \
		-o "$tmp/ev_srv.time" "$build/bin/metaroce-run" "$build/bin/metaroce-perf" -e \
		-p "$port" >"$tmp/ev_srv.out" 2>&1 &
	srv=$!
	until ip netns exec ${tag}b ss -Hltn "sport = :$port" | grep -q .; do sleep 0.05; done
	ip netns exec ${tag}a env METAROCE_SOCKET="$tmp/a.sock" /usr/bin/time -f "%U %S" \
		-o "$tmp/ev_cli.time" "$build/bin/metaroce-run" "$build/bin/metaroce-perf" -e -j \
		-p "$port" -t write -s 1M -Q 16 -D "$secs" 198.18.0.2 >"$tmp/ev_cli.out" 2>&1 ||
		{ cat "$tmp/ev_cli.out" >&2; exit 1; }
	wait $srv
	cpu1=$(echo "$(cpu_of "$daemon_a") $(cpu_of "$daemon_b")" | awk '{print $1 + $2}')
	set -- $(python3 -c 'import json,sys; t=open(sys.argv[1]).read(); j=json.loads(t[t.index("{"):t.rindex("}")+1]); print(j["gbps"], j["bytes"])' "$tmp/ev_cli.out")
	cat "$tmp/ev_srv.time" "$tmp/ev_cli.time" | awk -v d="$cpu1" -v d0="$cpu0" -v g="$1" \
		-v b="$2" '{s += $1 + $2} END {printf "%.4f %.0f %.3f %.3f\n", g, b, s + d - d0, d - d0}'
}

# the two alternate, so the machine's drift falls on both alike
: >"$tmp/runs"
i=0
while [ $i -lt "$runs" ]; do
	echo "tcp $(tcp_run) 0" >>"$tmp/runs"
	echo "mrc $(mrc_run)" >>"$tmp/runs"
	echo "ev $(sleeping_run)" >>"$tmp/runs"
	i=$((i + 1))
done

python3 - "$tmp/runs" "$mtu" "$secs" "$build/bench-udp-vs-tcp.json" <<'PY'
import json, statistics, sys
runs, mtu, secs, out = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
got = {"tcp": [], "mrc": [], "ev": []}
for line in open(runs):
    kind, gbps, nbytes, cpu, dcpu = line.split()
    gb = float(nbytes) / 1e9
    got[kind].append({"gbps": float(gbps), "cpu_s_per_gb": float(cpu) / gb,
                      "daemon_cpu_s_per_gb": float(dcpu) / gb,
                      "program_cpu_s_per_gb": (float(cpu) - float(dcpu)) / gb})
med = {k: {"gbps": statistics.median(r["gbps"] for r in v),
           "cpu_s_per_gb": statistics.median(r["cpu_s_per_gb"] for r in v),
           "daemon_cpu_s_per_gb": statistics.median(r["daemon_cpu_s_per_gb"] for r in v),
           "program_cpu_s_per_gb": statistics.median(r["program_cpu_s_per_gb"] for r in v),
           "runs": v}
       for k, v in got.items()}
for r in med["tcp"], med["tcp"]["runs"]:
    for x in (r if isinstance(r, list) else [r]):
        x.pop("daemon_cpu_s_per_gb"), x.pop("program_cpu_s_per_gb")
res = {"mtu": mtu, "seconds": secs, "runs": len(got["tcp"]), "tcp": med["tcp"],
       "metaroce_udp": med["mrc"], "metaroce_udp_sleeping": med["ev"],
       "goodput_ratio": med["mrc"]["gbps"] / med["tcp"]["gbps"],
       "cpu_ratio": med["mrc"]["cpu_s_per_gb"] / med["tcp"]["cpu_s_per_gb"],
       "goodput_ratio_sleeping": med["ev"]["gbps"] / med["tcp"]["gbps"],
       "cpu_ratio_sleeping": med["ev"]["cpu_s_per_gb"] / med["tcp"]["cpu_s_per_gb"]}
print("one connection over one veth pair, MTU %d, %g s each, median of %d alternating runs"
      % (mtu, secs, res["runs"]))
print("  %-46s %8s %14s %9s %9s" % ("", "Gbit/s", "CPU s per GB", "daemons", "programs"))
print("  %-46s %8.2f %14.3f" % ("kernel TCP (iperf3)", med["tcp"]["gbps"], med["tcp"]["cpu_s_per_gb"]))
for k, name in (("mrc", "MetaRoCE, udp backend, ib_write_bw (spins)"),
                ("ev", "MetaRoCE, udp backend, metaroce-perf -e")):
    print("  %-46s %8.2f %14.3f %9.3f %9.3f" % (name, med[k]["gbps"], med[k]["cpu_s_per_gb"],
                                                med[k]["daemon_cpu_s_per_gb"],
                                                med[k]["program_cpu_s_per_gb"]))
print("  %-46s %7.2fx %13.2fx" % ("ib_write_bw / TCP", res["goodput_ratio"], res["cpu_ratio"]))
print("  %-46s %7.2fx %13.2fx" % ("metaroce-perf -e / TCP", res["goodput_ratio_sleeping"],
                                  res["cpu_ratio_sleeping"]))
json.dump(res, open(out, "w"), indent=1)
print("wrote " + out)
PY
