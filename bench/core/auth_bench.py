#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""What packet authentication costs (SPEC 14.6): one QP's goodput and the daemons' CPU per GB
with `auth = off`, `auth = header` and `auth = full`, side by side in one run.

  bench/core/auth_bench.py BUILD_DIR [--seconds S] [--runs R] [--backends udp,xdp]
                           [--json FILE]  (make bench-auth)

The two hosts of bench/core/core_bench.py (two namespaces, a veth pair per plane, a metaroced
in each); one metaroce-perf WRITE stream (1 QP, 64 KiB messages, 16 in flight, sleeping on a
completion channel) for S seconds (5), R times (7) in each mode, the modes taking turns with
daemons started anew each time, so drift in this noisy 2-core guest falls on all alike; the
median run of each mode is reported. The daemons' CPU is their utime + stime from /proc over
the run. goodput_ratio = the median over rounds of header's goodput / off's in the same round
(goal >= 0.95); cpu_ratio = the median runs' daemon CPU s/GB, header's / off's; full_goodput_ratio
and full_cpu_ratio the same of full against off (no goal: full encrypts every byte, and on the
xdp backend the daemon, not the XDP program, places every sealed payload).
Writes FILE (default BUILD_DIR/bench-auth.json). A report, not a test. Root.
"""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import core_bench  # noqa: E402  (the pair of hosts, the counted stream)

GOAL_GOODPUT_RATIO = 0.95
TICK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK  # utime, stime


def one_run(pair, backend, mode, seconds, tag):
    settings = ["auth=off"] if mode == "off" else [
        "auth=" + mode, "cluster_key_file=" + pair.cluster_key,
        "key_file=" + os.path.join(pair.tmp, "h{h}.key")]
    st = pair.daemons(backend, settings)
    if st.get("auth") != mode:
        raise core_bench.Failed("daemons run auth %s, not %s" % (st.get("auth"), mode))
    before = [cpu_seconds(p.pid) for p in pair.daemon]
    r = core_bench.stream(pair, seconds, tag)
    after = [cpu_seconds(p.pid) for p in pair.daemon]
    pair.stop_daemons()
    r["backend"] = st.get("backend")
    r["daemon_cpu_s_per_gb"] = (sum(after) - sum(before)) / (r["bytes"] / 1e9)
    return r


def measure(build, backend, seconds, runs, tag):
    pair = core_bench.Pair(build, build, tag)
    try:
        pair.up()
        pair.cluster_key = os.path.join(pair.tmp, "cluster.key")
        fd = os.open(pair.cluster_key, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        os.write(fd, os.urandom(32))
        os.close(fd)
        got = {"off": [], "header": [], "full": []}
        for i in range(runs):
            for mode in got:
                got[mode].append(one_run(pair, backend, mode, seconds, "%s%d" % (mode, i)))
        res = {m: core_bench.median(v) for m, v in got.items()}
        res["backend"] = res["off"]["backend"]
        # each round's runs ran back to back: the median of their ratios is less at the
        # mercy of this guest's drift than the ratio of the medians
        for mode, key in (("header", ""), ("full", "full_")):
            pairs = sorted(m["gbps"] / o["gbps"] for o, m in zip(got["off"], got[mode])
                           if o["gbps"])
            res[key + "round_ratios"] = pairs
            res[key + "goodput_ratio"] = pairs[len(pairs) // 2] if pairs else 0.0
            off_cpu = res["off"]["daemon_cpu_s_per_gb"]
            res[key + "cpu_ratio"] = res[mode]["daemon_cpu_s_per_gb"] / off_cpu if off_cpu else 0.0
        return res
    finally:
        pair.down()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("build")
    ap.add_argument("--seconds", type=int, default=5)
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--backends", default="udp,xdp")
    ap.add_argument("--json")
    a = ap.parse_args()
    if os.geteuid():
        sys.exit("bench-auth needs root (network namespaces, perf)")
    tag = "mab%d" % (os.getpid() % 100000)
    res = {"goal_goodput_ratio": GOAL_GOODPUT_RATIO, "seconds": a.seconds, "runs": a.runs}
    core_bench.log("one metaroce-perf WRITE stream, 1 QP, %d s, auth off, header and full "
                   "taking turns, %d runs each" % (a.seconds, a.runs))
    try:
        for backend in a.backends.split(","):
            res[backend] = measure(a.build, backend, a.seconds, a.runs, tag)
            core_bench.log("  %s done" % backend)
    except core_bench.Failed as e:
        sys.exit("bench-auth: %s" % e)
    core_bench.log("")
    core_bench.log("%-8s %-7s %-7s %8s %8s %12s %8s" % (
        "asked", "backend", "auth", "Gb/s", "ratio", "cpu s/GB", "ratio"))
    for backend in a.backends.split(","):
        r = res[backend]
        for mode, key in (("off", None), ("header", ""), ("full", "full_")):
            core_bench.log("%-8s %-7s %-7s %8.3f %8s %12.3f %8s" % (
                backend, r["backend"], mode, r[mode]["gbps"],
                "%.3f" % r[key + "goodput_ratio"] if key is not None else "1",
                r[mode]["daemon_cpu_s_per_gb"],
                "%.3f" % r[key + "cpu_ratio"] if key is not None else "1"))
    core_bench.log("goal: header goodput >= %.2f x off" % GOAL_GOODPUT_RATIO)
    path = a.json or os.path.join(a.build, "bench-auth.json")
    with open(path, "w") as f:
        json.dump(res, f, indent=1)
    core_bench.log("wrote " + path)


if __name__ == "__main__":
    main()
