#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""Builds each mutant of mutants.txt (lib/proto with one change) into the suite's runner and
runs every script on it; a mutant is caught by the scripts that fail.

    mutants.py MUTANTS.txt WORKDIR OUT.json SCRIPT...

CC and CFLAGS come from the environment. Exits 1 if a mutant could not be made (its text is
gone from the engine: the list must follow the code) or no script caught it. The runner is
built with the mutated engine whole, its codec included, so a codec mutant that errs alike
in encoding and decoding is invisible to it; the decoder's refusals are checked with bytes
the scripts poke into packets, which the encoder does not touch.
"""
import json
import os
import shutil
import subprocess
import sys


def parse(path):
    mutants, cur = [], None
    for n, line in enumerate(open(path), 1):
        line = line.rstrip("\n")
        if not line.strip() or line.startswith("#"):
            continue
        key, _, value = line.partition(" ")
        value = value.replace("\\n", "\n").replace("\\t", "\t")
        if key == "mutant":
            cur = {"name": value}
            mutants.append(cur)
        elif key in ("file", "old", "new") and cur is not None:
            cur[key] = value
        else:
            sys.exit("%s:%d: expected mutant, file, old or new" % (path, n))
    for m in mutants:
        if not all(k in m for k in ("file", "old", "new")):
            sys.exit("%s: mutant %s lacks file, old or new" % (path, m["name"]))
    return mutants


def main():
    listing, work, out, scripts = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    cc = os.environ.get("CC", "cc")
    cflags = os.environ.get("CFLAGS", "-O1 -g").split()
    results, ok = [], True
    for m in parse(listing):
        tree = os.path.join(work, m["name"])
        shutil.rmtree(tree, ignore_errors=True)
        shutil.copytree(os.path.join(root, "lib/proto"), os.path.join(tree, "lib/proto"))
        src = os.path.join(tree, m["file"])
        text = open(src).read()
        if text.count(m["old"]) != 1:
            print("  MUTANT   %s: its text is in %s %d times, not once" % (m["name"], m["file"],
                                                                          text.count(m["old"])))
            results.append({"name": m["name"], "caught_by": [], "error": "text not found once"})
            ok = False
            continue
        open(src, "w").write(text.replace(m["old"], m["new"]))
        binary = os.path.join(tree, "compliance")
        sources = [os.path.join(root, "tests/compliance", f) for f in
                   ("compliance.c", "script.c", "script_verbs.c", "script_discover.c",
                    "fields.c", "names.c", "iut_engine.c", "iut_remote.c", "agent.c")]
        sources += sorted(os.path.join(tree, "lib/proto", f)
                          for f in os.listdir(os.path.join(tree, "lib/proto")) if f.endswith(".c"))
        build = subprocess.run([cc] + cflags + ["-std=gnu11", "-D_GNU_SOURCE", "-w",
                                "-I" + os.path.join(tree, "lib"), "-I" + root,
                                "-I" + os.path.join(root, "lib/include"),
                                "-I" + os.path.join(root, "lib"),
                                "-I" + os.path.join(root, "tests"),
                                "-o", binary] + sources + ["-lsodium"],
                               capture_output=True, text=True)
        if build.returncode:
            print("  MUTANT   %s: does not build:\n%s" % (m["name"], build.stderr[-2000:]))
            results.append({"name": m["name"], "caught_by": [], "error": "does not build"})
            ok = False
            continue
        res_path = os.path.join(tree, "results.json")
        # a mutant that crashes the runner or hangs it is caught too: by that, named so
        try:
            run = subprocess.run([binary, "engine", res_path] + scripts, capture_output=True,
                                 text=True, timeout=120)
            if run.returncode not in (0, 1):
                caught = ["(the runner died: exit %d)" % run.returncode]
            else:
                # a script the engine skips (it needs a whole node) catches nothing
                caught = [r["script"] for r in json.load(open(res_path))["results"]
                          if not r["pass"] and not r.get("skipped")]
        except subprocess.TimeoutExpired:
            caught = ["(the runner hung for 120 s)"]
        results.append({"name": m["name"], "caught_by": caught})
        print("  MUTANT   %-40s %s" % (m["name"], ("caught by " + ", ".join(caught)) if caught
                                       else "NOT CAUGHT"))
        ok = ok and bool(caught)
        shutil.rmtree(os.path.join(tree, "lib"))
    json.dump(results, open(out, "w"), indent=1)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
