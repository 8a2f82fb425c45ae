#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""Draws what metaroce-sim-report measured: the plots (gnuplot, PNG) and the generated section
of docs/SIMULATION.md, between its sim-report markers; the prose around them is the reader's
guide and stays as written.

    render_report.py REPORT.json DATA_DIR SIMULATION.md PLOT_DIR
    render_report.py --check REPORT.json

--check (make sim-check, on a --quick report) fails unless every key SIMULATION.md defines is
there and every run finished with every byte right, no QP in error and PFC within its headroom.
"""
import json
import os
import subprocess
import sys
import time

BEGIN = "<!-- sim-report:begin (written by make sim-report; edits here are overwritten) -->"
END = "<!-- sim-report:end -->"
NAMES = {"metaroce": "MetaRoCE", "rocev2_pfc": "RoCEv2 + PFC", "rocev2_lossy": "RoCEv2 lossy"}
BASELINES = ["metaroce", "rocev2_pfc", "rocev2_lossy"]
LOSSES = ["0", "0.001", "0.01", "0.1"]
TERM = 'set terminal pngcairo size 800,480 font ",11"'


def gnuplot(script):
    subprocess.run(["gnuplot"], input=script, text=True, check=True)


def plots(r, data, out):
    os.makedirs(out, exist_ok=True)
    rows = [line.split() for line in open(os.path.join(data, "loss.dat"))]
    for w, title in (("all_reduce", "Ring all-reduce"), ("all_to_all", "All-to-all")):
        table = "\n".join(
            "%s %s" % (l, " ".join(next((x[3] for x in rows if x[0] == w and x[1] == b
                                         and abs(float(x[2]) - float(l) * 100) < 1e-9), "NaN")
                                   for b in BASELINES))
            for l in LOSSES)
        gnuplot("""%s
set output "%s/loss_%s.png"
set title "%s, %d hosts, %d planes: completion time vs random loss"
set xlabel "random loss (share of packets, end to end)"; set ylabel "completion time (us)"
set logscale y; set grid; set key top left; set style data linespoints
$d << EOD
%s
EOD
plot $d u 0:2:xtic(1) lw 2 t "MetaRoCE", $d u 0:3 lw 2 t "RoCEv2 + PFC", \\
     $d u 0:4 lw 2 t "RoCEv2 lossy"
""" % (TERM, out, w, title, r["fabric"]["hosts"], r["fabric"]["planes"], table))
    gnuplot("""%s
set output "%s/plane_scaling.png"
set title "Plane scaling: every host WRITEs to every other (%s QPs)"
set xlabel "planes"; set ylabel "aggregate goodput (Gbit/s)"; set grid; set key top left
set logscale x 2
plot "%s/planes.dat" u 1:2 w lp lw 2 t "MetaRoCE", \\
     "" u 1:($1 * %g) w l dt 2 t "planes x one plane"
""" % (TERM, out, r.get("plane_scaling_qps", "every pair's"), data,
           r["plane_goodput_gbps"]["1"]))
    gnuplot("""%s
set output "%s/failover.png"
set title "Permutation over %d planes, the last one dark at %g us"
set xlabel "time (us)"; set ylabel "aggregate goodput (Gbit/s, per base RTT)"; set grid
unset key
set arrow from %g, graph 0 to %g, graph 1 nohead lc rgb "red"
plot "%s/failover.dat" u 1:2 w l lw 1
""" % (TERM, out, r["fabric"]["planes"], r["failover"]["at_us"], r["failover"]["at_us"],
           r["failover"]["at_us"], data))
    inc = [line.split() for line in open(os.path.join(data, "incast.dat"))]
    sizes = sorted({int(x[0]) for x in inc})
    table = "\n".join("%d %s" % (n, " ".join(next((x[3] for x in inc if int(x[0]) == n and
                                                    x[1] == b), "NaN") for b in BASELINES))
                      for n in sizes)
    gnuplot("""%s
set output "%s/incast_victim.png"
set title "A victim flow beside an N:1 incast: its goodput, share of alone"
set xlabel "senders"; set ylabel "victim goodput kept"; set yrange [0:1.1]; set grid
set style data histograms; set style fill solid 0.8; set key bottom left
$d << EOD
%s
EOD
plot $d u 2:xtic(1) t "MetaRoCE", "" u 3 t "RoCEv2 + PFC", "" u 4 t "RoCEv2 lossy"
""" % (TERM, out, table))


def fmt_us(c):
    if not c["finished"]:
        return "unfinished"
    return ("%.0f" % c["completion_us"]) + ("" if c["right"] else " (WRONG)")


def section(r, md_dir, plot_dir):
    rel = os.path.relpath(plot_dir, md_dir)
    f, col = r["fabric"], r["collectives"]
    out = [BEGIN, "",
           "Measured %s on this machine (%s), `make sim-report`, %.0f s." % (
               time.strftime("%Y-%m-%d"), r.get("machine", "?"), r.get("seconds", 0)), "",
           "Fabric: %d hosts, %d planes, each a leaf-spine of %d leaves and %d spines; %s links, "
           "%s each way; MTU %d (4 KiB payloads); switch queues mark CE from %d packets and hold "
           "%d; all-reduce buffer %d KiB a host, all-to-all block %d KiB." % (
               f["hosts"], f["planes"], f["leaves"], f["spines"], f["rate"], f["link_delay"],
               f["mtu"], f["ecn_k"], f["buffer"], f["all_reduce_bytes"] // 1024,
               f["all_to_all_block"] // 1024), "",
           "### Collectives under random loss", "",
           "Completion time in µs (the last host's); *kept* is the time at 0% over the time "
           "at that loss.", ""]
    for w, title in (("all_reduce", "Ring all-reduce"), ("all_to_all", "All-to-all")):
        out += ["**%s**" % title, "",
                "| loss | " + " | ".join(NAMES[b] for b in BASELINES) + " | MetaRoCE kept |",
                "|---|---|---|---|---|"]
        for l in LOSSES:
            cells = [fmt_us(col["%s/%s/%s" % (w, b, l)]) for b in BASELINES]
            m0, m = col["%s/metaroce/0" % w], col["%s/metaroce/%s" % (w, l)]
            kept = m0["completion_us"] / m["completion_us"] if m["finished"] else 0
            out.append("| %g%% | %s | %.0f%% |" % (float(l) * 100, " | ".join(cells),
                                                     100 * kept))
        out += ["", "![%s vs loss](%s/loss_%s.png)" % (title, rel, w), ""]
    out += ["Retransmitted packets, CE marks, switch drops and PAUSE frames of every run are "
            "in `build/sim-report.json`.", "",
            "### Plane scaling", "",
            "| planes | aggregate Gbit/s | ratio to one plane |", "|---|---|---|"]
    for p in ("1", "2", "4", "8"):
        out.append("| %s | %.0f | %.2f |" % (p, r["plane_goodput_gbps"][p],
                                             r["plane_scaling"][p]))
    out += ["", "![plane scaling](%s/plane_scaling.png)" % rel, "",
            "### Long-lived flows under loss", "",
            "%d hosts on %d planes, every host WRITEs to every other without end (%d QPs), "
            "%.0f µs: goodput over the second half at each loss rate, over the same at 0%%." % (
                r["flows_kept_fabric"]["hosts"], f["planes"], r["flows_kept_fabric"]["qps"],
                r["flows_kept_fabric"]["us"]), "",
            "| loss | MetaRoCE kept | RoCEv2 lossy kept |", "|---|---|---|"]
    fk = r["flows_kept"]
    for l in LOSSES:
        out.append("| %g%% | %.1f%% | %.1f%% |" % (float(l) * 100, 100 * fk["metaroce"][l],
                                                   100 * fk["rocev2_lossy"][l]))
    fo = r["failover"]
    out += ["",
            "### A plane failing", "",
            "| what | measured |", "|---|---|",
            "| permutation goodput before / after | %.0f / %.0f Gbit/s |" % (
                fo["before_gbps"], fo["after_gbps"]),
            "| back to 90%% of the surviving planes' share | %s |" % (
                "%.0f RTTs (%.0f µs)" % (r["failover_rtts"], fo["us"])
                if r["failover_rtts"] >= 0 else "never, within the run"),
            "| all-reduce with a plane dark a third in | %s µs (%s without) |" % (
                fmt_us(fo["all_reduce"]), fmt_us(col["all_reduce/metaroce/0"])),
            "| QPs in error, work requests failed | %d, %d |" % (fo["qps_errored"],
                                                              fo["wrs_failed"]), "",
            "![failover](%s/failover.png)" % rel, "",
            "### Incast", "",
            "RTTs from the incast's start until, over a whole fairness window, the receiver's "
            "queue stays under the marking threshold and the senders' shares are fair (Jain ≥ "
            "0.95); the victim's goodput beside the incast over its goodput alone.", "",
            "| senders | " + " | ".join(NAMES[b] + " RTTs (victim kept)" for b in BASELINES) +
            " | fairness window |", "|---|---|---|---|---|"]
    inc = r["incast"]
    for n in sorted({int(k.split("/")[0]) for k in inc}):
        cells = []
        for b in BASELINES:
            x = inc["%d/%s" % (n, b)]
            rtts = "%.0f" % x["converge_rtts"] if x["converge_rtts"] >= 0 else "never"
            cells.append("%s (%.2f)" % (rtts, x["victim_kept"]))
        out.append("| %d:1 | %s | %d RTTs |" % (n, " | ".join(cells),
                                                inc["%d/metaroce" % n]["window_rtts"]))
    out += ["", "![incast victim](%s/incast_victim.png)" % rel, "",
            "### The same collectives on a fat-tree and with shallow buffers", "",
            "| fabric | workload | loss | " + " | ".join(NAMES[b] for b in BASELINES) + " |",
            "|---|---|---|---|---|---|"]
    for fab, name in (("fat_tree", "%d-ary fat-trees" % r["fat_tree_k"]),
                      ("shallow", "shallow buffers")):
        for w in ("all_reduce", "all_to_all"):
            for l in ("0", "0.01"):
                out.append("| %s | %s | %g%% | %s |" % (
                    name, w.replace("_", "-"), float(l) * 100,
                    " | ".join(fmt_us(r[fab]["%s/%s/%s" % (w, b, l)]) for b in BASELINES)))
    s = r["scale"]
    out += ["", "### Scale", "",
            "| hosts | QPs | simulated | events | wall | events/s | heap a QP (engine's) "
            "| peak resident memory |",
            "|---|---|---|---|---|---|---|---|",
            "| %d | %d | %.0f µs%s | %d | %.0f s | %.0f | %.1f KiB (%.1f KiB) | %d MiB |" % (
                s["hosts"], s["qps"], s["completion_us"],
                "" if s["finished"] else " (unfinished)", s["events"], s["wall_s"],
                s["events_per_s"], s["bytes_per_qp"] / 1024, s["engine_bytes_per_qp"] / 1024,
                s["rss_mib"]), "", END]
    return out


def problems(r):
    """What a report that worked cannot have: a missing key, a run unfinished or wrong."""
    bad = ["no key %s" % k for k in ("kept_1pct", "kept_10pct", "plane_scaling",
                                      "failover_rtts", "incast_rtts", "scale_hosts",
                                      "flows_kept")
           if k not in r]
    for table in ("collectives", "fat_tree", "shallow"):
        for key, c in r.get(table, {}).items():
            if not (c["finished"] and c["right"]) or c["qps_errored"]:
                bad.append("%s %s: finished %s, right %s, %d QPs in error" % (
                    table, key, c["finished"], c["right"], c["qps_errored"]))
            if c["over_headroom"]:
                bad.append("%s %s: PFC held %d bytes past its headroom" % (
                    table, key, c["over_headroom"]))
    for key, x in r.get("incast", {}).items():
        if not x["finished"] or x["qps_errored"] or x["over_headroom"]:
            bad.append("incast %s: finished %s, %d QPs in error, %d bytes past PFC's "
                       "headroom" % (key, x["finished"], x["qps_errored"], x["over_headroom"]))
    if sorted(r.get("plane_scaling", {})) != ["1", "2", "4", "8"]:
        bad.append("plane_scaling is not 1, 2, 4, 8 planes")
    fo = r.get("failover", {})
    if fo.get("qps_errored", 1) or fo.get("wrs_failed", 1):
        bad.append("a QP errored or a work request failed through the failover")
    if not r.get("scale", {}).get("finished"):
        bad.append("the scale run did not finish")
    return bad


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--check":
        bad = problems(json.load(open(sys.argv[2])))
        for b in bad:
            print("sim-report: " + b, file=sys.stderr)
        sys.exit(1 if bad else 0)
    if len(sys.argv) != 5:
        sys.exit(__doc__)
    report, data, md, plot_dir = sys.argv[1:]
    r = json.load(open(report))
    plots(r, data, plot_dir)
    text = open(md).read()
    if BEGIN not in text or END not in text:
        sys.exit("%s: no sim-report markers to write between" % md)
    head, rest = text.split(BEGIN, 1)
    tail = rest.split(END, 1)[1]
    new = head + "\n".join(section(r, os.path.dirname(md), plot_dir)) + tail
    with open(md, "w") as f:
        f.write(new)
    print("written: %s, %s/*.png" % (md, plot_dir))


if __name__ == "__main__":
    main()
