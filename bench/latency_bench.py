#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""Small-message latency: a 64 B ping-pong over metaroced next to kernel UDP on the same link.

  bench/latency_bench.py BUILD_DIR [--seconds S] [--runs R] [--backend B] [--json FILE]
                                                                        (make bench-latency)

Two network namespaces joined by a veth pair per plane (bench/core/core_bench.py's Pair), a
metaroced in each. metaroce-perf ping-pongs 64 B SENDs with immediate on one QP in several
configurations of the daemons (`busy_poll`) and of the program (spinning on its CQ, or
sleeping on a completion channel, -e); sockperf ping-pongs 64 B UDP datagrams between the
same addresses. Each runs R times (3) for S seconds (3); the run of median p50 is reported.
`perf stat` counts, per round trip, the times the daemons and the programs went to sleep
(voluntary context switches: each is a wakeup later) and their system calls: on a machine
that pays for every wakeup, that is where a round trip's time goes.

p50_ratio and tail_ratio (p99.9 / p50) are those of the headline configuration, the daemons'
default (busy_poll = no) with a spinning program, as a verbs latency test runs; every
configuration is in the JSON. Writes FILE (default BUILD_DIR/bench-latency.json). A report,
not a test. Root; everything it made is removed at the end.
"""
import argparse
import json
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "core"))
from core_bench import Failed, Pair, counted_pair, read_counts  # noqa: E402
import sockperf_output  # noqa: E402

GOAL_P50_RATIO = 1.0
GOAL_TAIL_RATIO = 3.0

# (name, daemon settings, metaroce-perf options); the first is the headline
CONFIGS = [
    ("daemons sleep, program spins", ("busy_poll=no",), []),
    ("daemons sleep, program sleeps (-e)", ("busy_poll=no",), ["-e"]),
    ("daemons spin up to 100us, program sleeps (-e)", ("busy_poll=100us",), ["-e"]),
    ("daemons spin up to 100us, program spins", ("busy_poll=100us",), []),
]


def log(msg):
    print(msg, flush=True)


def ping_pong(pair, seconds, extra, tag):
    """One metaroce-perf latency run: its latency figures and counts per round trip."""
    summary, d, c = counted_pair(pair, tag, extra, ["-t", "send", "-m", "lat", "-s", "64",
                                                    "-D", str(seconds)] + extra, seconds)
    rtts = summary["messages"]
    if not rtts:
        raise Failed("metaroce-perf %s: no round trip" % tag)
    lat = summary["latency_us"]
    return {"p50": lat["p50"], "p99": lat["p99"], "p99_9": lat["p99_9"], "min": lat["min"],
            "round_trips": rtts,
            "daemon_wakeups_per_rtt": d[1] / rtts, "daemon_syscalls_per_rtt": d[0] / rtts,
            "program_wakeups_per_rtt": c[1] / rtts, "program_syscalls_per_rtt": c[0] / rtts}


def sockperf(pair, seconds):
    """sockperf UDP ping-pong, 64 B, plane 0: half round trip percentiles in us."""
    pair.port += 1
    srv = pair.spawn(1, ["sockperf", "sr", "-i", pair.addr(0, 1), "-p", str(pair.port)],
                     "sockperf.server")
    pair.wait_for("sockperf server", lambda: "Warmup" in pair.logtext("sockperf.server") or
                  re.search(r"udp.*%d" % pair.port, pair.sh(
                      "ip", "netns", "exec", pair.ns[1], "ss", "-Hlun")) is not None, 10)
    out = os.path.join(pair.tmp, "sockperf.out")
    r = subprocess.run(["ip", "netns", "exec", pair.ns[0], "perf", "stat", "-x,", "-o", out,
                        "-e", "sched:sched_switch", "--filter", "prev_state != 0", "--",
                        "sockperf", "pp", "-i", pair.addr(0, 1), "-p", str(pair.port), "-m",
                        "64", "-t", str(seconds)],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    srv.kill()
    srv.wait()
    got = sockperf_output.parse(r.stdout)
    if got["p50"] is None:
        raise Failed("sockperf: %s" % r.stdout[-400:])
    got["client_wakeups_per_rtt"] = (read_counts(out)[1] / got["round_trips"]
                                     if got["round_trips"] else None)
    return got


def median_run(runs):
    runs = sorted(runs, key=lambda r: r["p50"])
    med = dict(runs[len(runs) // 2])
    med["runs_p50"] = [r["p50"] for r in runs]
    return med


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("build")
    ap.add_argument("--seconds", type=int, default=3)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--backend", default="auto")
    ap.add_argument("--configs", type=int, default=len(CONFIGS),
                    help="only the first N configurations (an older build lacks the others)")
    ap.add_argument("--json")
    a = ap.parse_args()
    if os.geteuid():
        sys.exit("bench-latency needs root (network namespaces, perf)")
    for tool in ("sockperf", "perf"):
        if subprocess.run(["sh", "-c", "command -v " + tool], stdout=subprocess.DEVNULL).returncode:
            sys.exit("bench-latency: %s is not installed (make deps)" % tool)
    pair = Pair(a.build, a.build, "mlb%d" % (os.getpid() % 100000))
    res = {"seconds": a.seconds, "runs": a.runs, "size": 64,
           "definition": "half round trip, microseconds", "configs": []}
    try:
        pair.up()
        log("64 B ping-pong, half round trip in us, %d s per run, median of %d runs"
            % (a.seconds, a.runs))
        log("  %-48s %8s %8s %8s %9s %9s" % ("", "p50", "p99", "p99.9", "d wk/rtt",
                                            "p wk/rtt"))
        for i, (name, settings, extra) in enumerate(CONFIGS[:a.configs]):
            st = pair.daemons(a.backend, settings)
            res.setdefault("backend", st.get("backend"))
            r = median_run([ping_pong(pair, a.seconds, extra, "c%dr%d" % (i, k))
                            for k in range(a.runs)])
            pair.stop_daemons()
            r.update({"name": name, "daemon_settings": list(settings), "perf_options": extra})
            res["configs"].append(r)
            log("  %-48s %8.1f %8.1f %8.1f %9.2f %9.2f" % (
                "MetaRoCE: " + name, r["p50"], r["p99"], r["p99_9"],
                r["daemon_wakeups_per_rtt"], r["program_wakeups_per_rtt"]))
        udp = median_run([sockperf(pair, a.seconds) for _ in range(a.runs)])
        res["sockperf_udp"] = udp
        log("  %-48s %8.1f %8.1f %8.1f %9s %9.2f" % (
            "kernel UDP: sockperf ping-pong", udp["p50"], udp["p99"], udp["p99_9"], "",
            udp["client_wakeups_per_rtt"] or 0))
    except Failed as e:
        sys.exit("bench-latency: %s" % e)
    finally:
        pair.down()
    head = res["configs"][0]
    res["headline"] = head["name"]
    res["p50_ratio"] = head["p50"] / udp["p50"]
    res["tail_ratio"] = head["p99_9"] / head["p50"]
    best = min(res["configs"], key=lambda r: r["p50"])
    res["best"] = {"name": best["name"], "p50_ratio": best["p50"] / udp["p50"],
                   "tail_ratio": best["p99_9"] / best["p50"]}
    res["goal_p50_ratio"], res["goal_tail_ratio"] = GOAL_P50_RATIO, GOAL_TAIL_RATIO
    log("p50_ratio %.2f (goal <= %.1f), tail_ratio %.1f (goal <= %.0f): %s" % (
        res["p50_ratio"], GOAL_P50_RATIO, res["tail_ratio"], GOAL_TAIL_RATIO, head["name"]))
    log("best p50: %s, %.2fx sockperf's, tail %.1f" % (best["name"], res["best"]["p50_ratio"],
                                                        res["best"]["tail_ratio"]))
    path = a.json or os.path.join(a.build, "bench-latency.json")
    with open(path, "w") as f:
        json.dump(res, f, indent=1)
    log("wrote " + path)


if __name__ == "__main__":
    main()
