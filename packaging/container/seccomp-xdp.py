#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""A container engine's default seccomp profile, with bpf() allowed to CAP_BPF.

    python3 seccomp-xdp.py [DEFAULT_PROFILE] > seccomp-xdp.json

The xdp backend loads its program and makes its maps with bpf() under CAP_BPF; the engines'
default profiles (containers-common's /usr/share/containers/seccomp.json, which podman and
CRI-O use, and the one DEFAULT_PROFILE names otherwise) allow bpf() only to CAP_SYS_ADMIN, a
capability the daemon does not need and should not have. Everything else stays as the
default has it, so the profile follows the engine's own as it is updated. seccomp-xdp.json
beside this script is its output for Debian 12's containers-common.
"""
import json
import sys

src = sys.argv[1] if len(sys.argv) > 1 else "/usr/share/containers/seccomp.json"
with open(src) as f:
    profile = json.load(f)

found = False
for rule in profile["syscalls"]:
    if "bpf" in rule["names"]:
        found = True
        # the rules that tie it to CAP_SYS_ADMIN (allow with it, refuse without) keep the
        # other calls they name
        rule["names"] = [n for n in rule["names"] if n != "bpf"]
if not found:
    sys.exit("seccomp-xdp: %s says nothing of bpf(): nothing to change" % src)
profile["syscalls"] = [r for r in profile["syscalls"] if r["names"]]
profile["syscalls"].append({
    "names": ["bpf"],
    "action": "SCMP_ACT_ALLOW",
    "includes": {"caps": ["CAP_BPF"]},
    "comment": "metaroced's xdp backend: its XDP program and maps (CAP_BPF, not CAP_SYS_ADMIN)",
})
profile["syscalls"].append({
    "names": ["bpf"],
    "action": "SCMP_ACT_ALLOW",
    "includes": {"caps": ["CAP_SYS_ADMIN"]},
    "comment": "as the default: CAP_SYS_ADMIN implies CAP_BPF",
})
# one rule per line: a reader sees the rules, and a diff against the default stays short
rules = profile.pop("syscalls")
out = json.dumps(profile, indent=1)[:-2]
out += ',\n "syscalls": [\n  ' + ",\n  ".join(json.dumps(r) for r in rules) + "\n ]\n}\n"
json.loads(out)
sys.stdout.write(out)
