#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""The seccomp profile of metaroced's xdp backend in a container, as plain OCI JSON.

    python3 seccomp-xdp.py [--arch amd64] [DEFAULT_PROFILE] > seccomp-xdp.json

The xdp backend loads its program and makes its maps with bpf() under CAP_BPF; the engines'
default profiles (containers-common's /usr/share/containers/seccomp.json, which podman and
CRI-O use, the one DEFAULT_PROFILE names otherwise) allow bpf() only to CAP_SYS_ADMIN, a
capability the daemon does not need and should not have. This takes such a default and
resolves it for the one container it is for: the capabilities the daemon runs with (below)
and one architecture. Rules that apply to them stay, others go, the default's capability and
architecture conditions with them (containerd reads a Localhost profile as plain OCI JSON and
would apply every conditional rule at once); bpf() is allowed. seccomp-xdp.json beside this
script is its output for Debian 12's containers-common on amd64.
"""
import json
import sys

# what packaging/k8s/daemonset.yaml and make test-containers give the node daemon
CAPS = {"CAP_NET_ADMIN", "CAP_BPF", "CAP_PERFMON", "CAP_NET_RAW", "CAP_IPC_LOCK"}
SCMP_ARCH = {"amd64": "SCMP_ARCH_X86_64", "arm64": "SCMP_ARCH_AARCH64",
             "ppc64le": "SCMP_ARCH_PPC64LE", "s390x": "SCMP_ARCH_S390X"}

args = sys.argv[1:]
arch = "amd64"
if args[:1] == ["--arch"]:
    arch, args = args[1], args[2:]
src = args[0] if args else "/usr/share/containers/seccomp.json"
default = json.load(open(src))
if arch not in SCMP_ARCH:
    sys.exit("seccomp-xdp: no seccomp architecture for %s" % arch)


def applies(rule):
    inc, exc = rule.get("includes") or {}, rule.get("excludes") or {}
    if not set(inc.get("caps") or []) <= CAPS or set(exc.get("caps") or []) & CAPS:
        return False
    if inc.get("arches") and arch not in inc["arches"]:
        return False
    if arch in (exc.get("arches") or []) or inc.get("minKernel"):
        return False
    return True


rules = []
for rule in default["syscalls"]:
    names = [n for n in rule["names"] if n != "bpf"]
    if not names or not applies(rule):
        continue
    out = {"names": names, "action": rule["action"]}
    for key in ("args", "errnoRet"):
        if rule.get(key):
            out[key] = rule[key]
    rules.append(out)
rules.append({"names": ["bpf"], "action": "SCMP_ACT_ALLOW"})
# A call the default both allows outright and refuses for want of a capability (setns, in
# containers-common 0.50) keeps the refusal: one rule without arguments per call, as a
# runtime that hands them to libseccomp one by one needs.
refused = {n for r in rules if "args" not in r and r["action"] != "SCMP_ACT_ALLOW"
           for n in r["names"]}
for r in rules:
    if "args" not in r and r["action"] == "SCMP_ACT_ALLOW":
        r["names"] = [n for n in r["names"] if n not in refused]
rules = [r for r in rules if r["names"]]

main_arch = [a for a in default.get("archMap", []) if a["architecture"] == SCMP_ARCH[arch]]
profile = {
    "defaultAction": default["defaultAction"],
    "defaultErrnoRet": default.get("defaultErrnoRet", 1),
    "architectures": [SCMP_ARCH[arch]] + (main_arch[0].get("subArchitectures", [])
                                          if main_arch else []),
}
# one rule per line: a reader sees the rules, and a diff after a regeneration stays short
out = json.dumps(profile, indent=1)[:-2]
out += ',\n "syscalls": [\n  ' + ",\n  ".join(json.dumps(r) for r in rules) + "\n ]\n}\n"
json.loads(out)
sys.stdout.write(out)
