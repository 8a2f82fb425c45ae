#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""What the daemon's own work costs: one QP's goodput with no other QP in the daemons and with
thousands of connected idle ones, and the system calls and wakeups per GB moved.

  bench/core/core_bench.py BUILD_DIR [--compare OTHER_BUILD] [--idle N] [--seconds S]
                           [--backend auto|udp|xdp] [--runs R] [--json FILE]  (make bench-core)

Two network namespaces joined by one veth pair per plane (2 planes, MTU 1500), a metaroced in
each (the backend it chose is read back from `metaroce-ctl -j status`). One metaroce-perf
WRITE stream (1 QP, 64 KiB messages, 16 in flight, sleeping on a completion channel) runs
R times (3) in the same daemons alone, then R times with N connected RC QPs
(bench/core/idle_qps.c) that carry nothing; each side's median run is reported, since this
2-core guest moves a lone stream ±15% from run to run. idle_ratio = the median goodput with
them / the median without. During each run
`perf stat` counts the system calls of the daemons and of the two metaroce-perf processes,
and the times each went to sleep (voluntary context switches, i.e. wakeups), per GB moved.

--compare runs the same on another build (e.g. a worktree of an older commit, built with
`make all`), one after the other in this run: the before/after of a change to the daemon.
Writes FILE (default BUILD_DIR/bench-core.json). A report, not a test: nothing here fails on
a figure. Root; the namespaces and every process are removed at the end.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
GOAL_IDLE_RATIO = 0.95
PLANES = 2


def log(msg):
    print(msg, flush=True)


class Failed(Exception):
    pass


class Pair:
    """Two hosts in network namespaces, a veth pair per plane, a daemon on each."""

    def __init__(self, build, tool_build, tag):
        self.build = os.path.abspath(build)
        self.tool_build = os.path.abspath(tool_build)
        self.tag = tag
        self.tmp = tempfile.mkdtemp(prefix="metaroce-core.")
        self.procs = []
        self.ns = [tag + "a", tag + "b"]
        self.port = 18900

    @staticmethod
    def addr(plane, host):
        return "198.18.%d.%d" % (32 * plane, host + 1)

    def sh(self, *argv):
        r = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        if r.returncode:
            raise Failed("%s: %s" % (" ".join(argv), r.stderr.strip()))
        return r.stdout

    def up(self):
        for n in self.ns:
            self.sh("ip", "netns", "add", n)
        for p in range(PLANES):
            self.sh("ip", "link", "add", "p%d" % p, "netns", self.ns[0], "type", "veth", "peer",
                    "p%d" % p, "netns", self.ns[1])
            for h in (0, 1):
                self.sh("ip", "-n", self.ns[h], "addr", "add", self.addr(p, h) + "/24", "dev",
                        "p%d" % p)
                self.sh("ip", "-n", self.ns[h], "link", "set", "p%d" % p, "up")
        for n in self.ns:
            self.sh("ip", "-n", n, "link", "set", "lo", "up")

    def down(self):
        for p in self.procs:
            if p.poll() is None:
                p.kill()
                p.wait()
        self.procs = []
        for n in self.ns:
            subprocess.run(["ip", "netns", "del", n], stderr=subprocess.DEVNULL)
        subprocess.run(["rm", "-rf", self.tmp])

    def spawn(self, host, argv, name, stdin=None, env=None):
        out = open(os.path.join(self.tmp, name + ".log"), "w")
        cmd = ["ip", "netns", "exec", self.ns[host], "env"] + \
            ["%s=%s" % kv for kv in (env or {}).items()] + argv
        p = subprocess.Popen(cmd, stdin=stdin or subprocess.DEVNULL, stdout=out,
                             stderr=subprocess.STDOUT, text=True)
        self.procs.append(p)
        return p

    def logtext(self, name):
        try:
            return open(os.path.join(self.tmp, name + ".log")).read()
        except OSError:
            return ""

    def wait_for(self, what, cond, seconds):
        deadline = time.monotonic() + seconds
        while not cond():
            if time.monotonic() > deadline:
                raise Failed("no %s after %d s" % (what, seconds))
            time.sleep(0.05)

    def sock(self, host):
        return os.path.join(self.tmp, "h%d.sock" % host)

    def ctl(self, host, *args):
        out = self.sh(os.path.join(self.build, "bin", "metaroce-ctl"), "-S", self.sock(host),
                      "-j", *args)
        return json.loads(out)

    def daemons(self, backend, settings=()):
        """A daemon per host; settings: more `key=value`s for both ({h} becomes the host's
        number: a key_file of its own)."""
        self.daemon = []
        for h in (0, 1):
            argv = [os.path.join(self.build, "sbin", "metaroced"), "--set",
                    "peer_prefix=198.18.0.0/16", "--set", "control_socket=" + self.sock(h),
                    "--set", "backend=" + backend]
            for kv in settings:
                argv += ["--set", kv.replace("{h}", str(h))]
            for p in range(PLANES):
                argv += ["--set", "plane=%d p%d %s" % (p, p, self.addr(p, h))]
            self.daemon.append(self.spawn(h, argv, "h%d" % h))
        for h in (0, 1):
            self.wait_for("daemon %d" % h, lambda: os.path.exists(self.sock(h)) and
                          "backend " in self.logtext("h%d" % h), 15)
        return self.ctl(0, "status")

    def stop_daemons(self):
        for p in self.daemon:
            p.terminate()
            p.wait(timeout=30)
        for h in (0, 1):
            try:
                os.unlink(self.sock(h))
            except OSError:
                pass

    def verbs(self, host, argv):
        """argv through this build's metaroce-run, on host's daemon."""
        return [os.path.join(self.build, "bin", "metaroce-run")] + argv, \
            {"METAROCE_SOCKET": self.sock(host), "METAROCE_QUIET": "1"}

    def counted(self, argv, out):
        return ["perf", "stat", "-x,", "-o", out, "-e", "raw_syscalls:sys_enter", "-e",
                "sched:sched_switch", "--filter", "prev_state != 0", "--"] + argv


def read_counts(path):
    """(system calls, voluntary switches) from a `perf stat -x,` file."""
    sc = sw = 0
    for line in open(path):
        f = line.strip().split(",")
        if len(f) > 2 and f[0].isdigit():
            if f[2] == "raw_syscalls:sys_enter":
                sc += int(f[0])
            elif f[2] == "sched:sched_switch":
                sw += int(f[0])
    return sc, sw


def counted_pair(pair, tag, server_args, client_args, seconds):
    """A metaroce-perf server on host 1 and client on host 0 with `perf stat` counting their
    and the daemons' system calls and sleeps: (the client's JSON summary, the daemons'
    (syscalls, sleeps), the two programs' (syscalls, sleeps))."""
    pair.port += 1
    perf = os.path.join(pair.build, "bin", "metaroce-perf")
    files = {k: os.path.join(pair.tmp, "%s.%s.perf" % (tag, k)) for k in ("d", "s", "c")}
    pids = ",".join(str(p.pid) for p in pair.daemon)
    argv, env = pair.verbs(1, [perf, "-p", str(pair.port)] + server_args)
    srv = pair.spawn(1, pair.counted(argv, files["s"]), tag + ".server", env=env)
    dstat = subprocess.Popen(["perf", "stat", "-x,", "-o", files["d"], "-p", pids, "-e",
                              "raw_syscalls:sys_enter", "-e", "sched:sched_switch", "--filter",
                              "prev_state != 0"], stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
    pair.procs.append(dstat)
    argv, env = pair.verbs(0, [perf, "-j", "-p", str(pair.port)] + client_args +
                           [pair.addr(0, 1)])
    cli = pair.spawn(0, pair.counted(argv, files["c"]), tag + ".client", env=env)
    if cli.wait(timeout=seconds + 120) or srv.wait(timeout=30):
        raise Failed("metaroce-perf %s: %s" % (tag, pair.logtext(tag + ".client")[-400:]))
    dstat.send_signal(2)
    dstat.wait(timeout=10)
    text = pair.logtext(tag + ".client")
    summary = json.loads(text[text.index("{"):text.rindex("}") + 1])
    programs = [a + b for a, b in zip(read_counts(files["s"]), read_counts(files["c"]))]
    return summary, read_counts(files["d"]), programs


def stream(pair, seconds, tag):
    """One metaroce-perf WRITE stream, host 0 to host 1, with everything counted."""
    summary, d, c = counted_pair(pair, tag, ["-e"], ["-e", "-t", "write", "-s", "64K", "-q",
                                                     "1", "-Q", "16", "-D", str(seconds)],
                                 seconds)
    gb = summary["bytes"] / 1e9
    return {
        "gbps": summary["gbps"],
        "bytes": summary["bytes"],
        "errors": summary["errors"],
        "daemon_syscalls_per_gb": d[0] / gb,
        "daemon_wakeups_per_gb": d[1] / gb,
        "client_syscalls_per_gb": c[0] / gb,
        "client_wakeups_per_gb": c[1] / gb,
    }


def median(got):
    """The run of median goodput (its counts with it), and all the runs' goodputs."""
    got = sorted(got, key=lambda r: r["gbps"])
    med = dict(got[len(got) // 2])
    med["runs_gbps"] = [r["gbps"] for r in got]
    return med


def median_run(pair, seconds, tag, runs):
    """The run of median goodput out of `runs` streams."""
    return median([stream(pair, seconds, "%s%d" % (tag, i)) for i in range(runs)])


def measure(build, tool_build, backend, idle, seconds, tag, runs):
    pair = Pair(build, tool_build, tag)
    try:
        pair.up()
        st = pair.daemons(backend)
        log("  %s: backend %s" % (build, st.get("backend", "?")))
        alone = median_run(pair, seconds, "alone", runs)
        log("    1 QP alone:          %7.3f Gbit/s (median; runs %s)"
            % (alone["gbps"], " ".join("%.3f" % g for g in alone["runs_gbps"])))
        idle_bin = os.path.join(pair.tool_build, "bench", "idle-qps")
        argv, env = pair.verbs(1, [idle_bin, "-n", str(idle), "-c", "2000"])
        srv = pair.spawn(1, argv, "idle.server", env=env)
        argv, env = pair.verbs(0, [idle_bin, "-n", str(idle), "-c", "2000", pair.addr(0, 1)])
        cli = pair.spawn(0, argv, "idle.client", stdin=subprocess.PIPE, env=env)
        pair.wait_for("idle QPs at RTS", lambda: "at RTS" in pair.logtext("idle.client") and
                      "at RTS" in pair.logtext("idle.server") or
                      cli.poll() is not None or srv.poll() is not None, 300)
        if cli.poll() is not None or srv.poll() is not None:
            raise Failed("idle-qps: %s %s" % (pair.logtext("idle.client")[-300:],
                                               pair.logtext("idle.server")[-300:]))
        qps = [pair.ctl(h, "status").get("qps", 0) for h in (0, 1)]
        if min(qps) < idle:
            raise Failed("the daemons hold %s QPs, not %d" % (qps, idle))
        busy = median_run(pair, seconds, "idle", runs)
        log("    1 QP + %d idle:    %7.3f Gbit/s (median; runs %s)"
            % (idle, busy["gbps"], " ".join("%.3f" % g for g in busy["runs_gbps"])))
        cli.stdin.close()
        cli.wait(timeout=120)
        srv.wait(timeout=120)
        return {"backend": st.get("backend"), "idle_qps": idle, "alone": alone, "with_idle": busy,
                "idle_ratio": busy["gbps"] / alone["gbps"] if alone["gbps"] else 0.0}
    finally:
        pair.down()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("build")
    ap.add_argument("--compare", help="another build to run the same on (the 'before')")
    ap.add_argument("--idle", type=int, default=4000)
    ap.add_argument("--seconds", type=int, default=5)
    ap.add_argument("--backend", default="auto")
    ap.add_argument("--runs", type=int, default=3,
                    help="streams of each kind; the median is reported (the guest is noisy)")
    ap.add_argument("--json")
    a = ap.parse_args()
    if os.geteuid():
        sys.exit("bench-core needs root (network namespaces, perf)")
    tag = "mcb%d" % (os.getpid() % 100000)
    res = {"goal_idle_ratio": GOAL_IDLE_RATIO, "seconds": a.seconds, "runs": a.runs}
    try:
        log("one metaroce-perf WRITE stream, 1 QP, %d s, alone and beside %d idle QPs"
            % (a.seconds, a.idle))
        res["this"] = measure(a.build, a.build, a.backend, a.idle, a.seconds, tag, a.runs)
        if a.compare:
            res["compare"] = measure(a.compare, a.build, a.backend, a.idle, a.seconds, tag,
                                     a.runs)
    except Failed as e:
        sys.exit("bench-core: %s" % e)
    res["idle_ratio"] = res["this"]["idle_ratio"]
    rows = [("this", res["this"])] + ([("compare", res["compare"])] if a.compare else [])
    log("")
    log("%-8s %-7s %9s %9s %6s %13s %13s %13s %13s" % (
        "build", "backend", "alone", "+idle", "ratio", "daemon sc/GB", "daemon wk/GB",
        "client sc/GB", "client wk/GB"))
    for name, r in rows:
        w = r["with_idle"]
        log("%-8s %-7s %9.3f %9.3f %6.3f %13.0f %13.0f %13.0f %13.0f" % (
            name, r["backend"], r["alone"]["gbps"], w["gbps"], r["idle_ratio"],
            r["alone"]["daemon_syscalls_per_gb"], r["alone"]["daemon_wakeups_per_gb"],
            r["alone"]["client_syscalls_per_gb"], r["alone"]["client_wakeups_per_gb"]))
    log("idle_ratio %.3f (goal >= %.2f)" % (res["idle_ratio"], GOAL_IDLE_RATIO))
    path = a.json or os.path.join(a.build, "bench-core.json")
    with open(path, "w") as f:
        json.dump(res, f, indent=1)
    log("wrote " + path)


if __name__ == "__main__":
    main()
