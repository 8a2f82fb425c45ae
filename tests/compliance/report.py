#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""The compliance report: what each script found on each implementation, and which of the
specification's requirements the scripts cover.

    report.py SPEC.md OUTDIR RESULTS.json... [--mutants MUTANTS.json] [--matrix MATRIX.json]...
              [--elsewhere ELSEWHERE.txt]

Writes OUTDIR/report.md, OUTDIR/report.json and OUTDIR/junit.xml, and prints the summary.
A requirement is a MUST when the sentence that names its id ([R-N]) says MUST or MUST NOT.
The suite covers the MUSTs of sections 2-12, 14 and 15 (the wire protocol and its security);
those of other sections (17, connection management) are listed apart. ELSEWHERE.txt names,
for MUSTs no wire script can show, the test outside the suite that checks them: such a MUST
still counts as without a script, and the report says where it is checked.
"""
import json
import re
import sys
from xml.sax.saxutils import escape, quoteattr


SCOPE = set(range(2, 13)) | {14, 15}  # the sections whose MUSTs the suite must cover


def requirements(spec_path):
    """{id: (sentence, is_must, section)} for every [R-N] in the specification, first
    mention."""
    text = re.sub(r"\s+", " ", open(spec_path).read())
    # the table of requirement ids at the end repeats them, with no MUST: stop before it
    end = text.find("## Appendix")
    text = text if end < 0 else text[:end]
    found = {}
    tag = re.compile(r"\[(R-\d+(?:, R-\d+)*)\]")
    sections = [(m.start(), int(m.group(1))) for m in re.finditer(r"## (\d+)\. ", text)]
    prev_tag_end = 0
    for m in tag.finditer(text):
        # the sentence: from the last full stop or the previous requirement's tag (not any
        # bracket: "[rto_min, rto_max]" is part of a sentence)
        start = max(text.rfind(". ", 0, m.start()) + 2, prev_tag_end)
        prev_tag_end = m.end()
        sentence = text[start:m.end()]
        section = max([n for at, n in sections if at < m.start()] or [0])
        for rid in m.group(1).split(", "):
            if rid not in found:
                found[rid] = (sentence, "MUST" in sentence, section)
    return found


def elsewhere_list(path):
    """{id: where} from lines 'R-N PATH: what it checks'."""
    out = {}
    for line in open(path):
        line = line.split("#", 1)[0].strip()
        if line:
            rid, where = line.split(None, 1)
            out[rid] = where
    return out


def outcome(res):
    """pass, skip (the IUT cannot make the case's QP, or it needs a virtual clock), known (a
    deviation its adapter's list names) or fail."""
    if res["pass"]:
        return "pass"
    if res.get("skipped"):
        return "skip"
    if res.get("known"):
        return "known"
    return "fail"


def main():
    args = sys.argv[1:]
    mutants = None
    if "--mutants" in args:
        i = args.index("--mutants")
        mutants = json.load(open(args[i + 1]))
        del args[i:i + 2]
    elsewhere = {}
    if "--elsewhere" in args:
        i = args.index("--elsewhere")
        elsewhere = elsewhere_list(args[i + 1])
        del args[i:i + 2]
    matrices = []
    while "--matrix" in args:
        i = args.index("--matrix")
        matrices.append(json.load(open(args[i + 1])))
        del args[i:i + 2]
    spec, outdir, results = args[0], args[1], args[2:]
    # the scenario matrix: one cell per (scenario, client, server), whichever run gave it
    grid = {}
    for m in matrices:
        for c in m["results"]:
            grid[(c["scenario"], c["client"], c["server"])] = c
    scenario_names = list(dict.fromkeys(c[0] for c in grid))
    sides = list(dict.fromkeys([k[1] for k in grid] + [k[2] for k in grid]))
    matrix_failed = [c for c in grid.values() if not c["pass"]]
    reqs = requirements(spec)
    runs = [json.load(open(r)) for r in results]

    matrix = {}  # id -> {script: {adapter: pass}}
    unknown = set()
    for run in runs:
        for res in run["results"]:
            for rid in res["requires"]:
                if rid not in reqs:
                    unknown.add((res["script"], rid))
                by_script = matrix.setdefault(rid, {}).setdefault(res["script"], {})
                by_script[run["adapter"]] = outcome(res)
    all_musts = sorted((r for r, (_, must, _) in reqs.items() if must), key=lambda r: int(r[2:]))
    musts = [r for r in all_musts if reqs[r][2] in SCOPE]
    outside = [r for r in all_musts if reqs[r][2] not in SCOPE]
    uncovered = [r for r in musts if r not in matrix]
    # a MUST whose scripts pass on no implementation is covered on paper only
    never_passed = [r for r in musts if r in matrix and
                    not any(o == "pass" for by in matrix[r].values() for o in by.values())]
    unknown |= {("elsewhere", r) for r in elsewhere if r not in reqs}
    scripts = {res["script"] for run in runs for res in run["results"]}
    failed = [(run["adapter"], res) for run in runs for res in run["results"]
              if outcome(res) == "fail"]
    known = [(run["adapter"], res) for run in runs for res in run["results"]
             if outcome(res) == "known"]
    skipped = [(run["adapter"], res) for run in runs for res in run["results"]
               if outcome(res) == "skip"]

    summary = {
        "adapters": [run["adapter"] for run in runs],
        "scripts": len(scripts),
        "scripts_failed": len(failed),
        "scripts_skipped": len(skipped),
        "known_deviations": len(known),
        "requirements_total": len(reqs),
        "musts_total": len(musts),
        "musts_covered": len(musts) - len(uncovered),
        "musts_uncovered": len(uncovered),
        "uncovered": uncovered,
        "uncovered_checked_elsewhere": {r: elsewhere[r] for r in uncovered if r in elsewhere},
        "musts_never_passed": never_passed,
        "musts_outside_scope": len(outside),
        "outside_scope_uncovered": [r for r in outside if r not in matrix],
        "unknown_ids": sorted("%s: %s" % u for u in unknown),
        "results": {run["adapter"]: run["results"] for run in runs},
        "matrix": matrix,
    }
    summary["matrix_scenarios"] = scenario_names
    summary["matrix_cells"] = len(grid)
    summary["matrix_failed"] = len(matrix_failed)
    summary["scenario_matrix"] = list(grid.values())
    if mutants is not None:
        summary["mutants"] = len(mutants)
        summary["mutants_caught"] = sum(1 for m in mutants if m["caught_by"])
        summary["mutant_results"] = mutants
    with open(outdir + "/report.json", "w") as f:
        json.dump(summary, f, indent=1)

    with open(outdir + "/report.md", "w") as f:
        f.write("# Compliance report\n\n")
        f.write("| adapter | scripts | pass | fail | skipped | known deviations |\n"
                "|---|---|---|---|---|---|\n")
        for run in runs:
            n = {k: sum(1 for r in run["results"] if outcome(r) == k)
                 for k in ("pass", "fail", "skip", "known")}
            f.write("| %s | %d | %d | %d | %d | %d |\n" % (run["adapter"], len(run["results"]),
                                                         n["pass"], n["fail"], n["skip"],
                                                         n["known"]))
        f.write("\n%d of the %d MUST requirements of sections 2-12, 14 and 15 have a script; "
                "%d have none" % (len(musts) - len(uncovered), len(musts), len(uncovered)))
        f.write(" (%d of them checked by a test outside the suite, listed below).\n"
                % sum(1 for r in uncovered if r in elsewhere))
        if never_passed:
            f.write("Covered on paper only (no script of theirs passes anywhere): %s.\n"
                    % ", ".join(never_passed))
        f.write("Other sections (connection management) hold %d MUSTs, %d with a script.\n\n"
                % (len(outside), sum(1 for r in outside if r in matrix)))
        if failed:
            f.write("## Failures\n\n")
            for adapter, res in failed:
                f.write("- %s, %s:%d: %s\n" % (adapter, res["script"], res["line"], res["why"]))
            f.write("\n")
        if known:
            f.write("## Known deviations (tests/compliance/known/)\n\n")
            for adapter, res in known:
                f.write("- %s, %s:%d: %s — %s\n" % (adapter, res["script"], res["line"],
                                                   res["why"], res["known"]))
            f.write("\n")
        if skipped:
            f.write("## Skipped\n\n")
            for adapter, res in skipped:
                f.write("- %s, %s: %s\n" % (adapter, res["script"], res["why"]))
            f.write("\n")
        if grid:
            f.write("## Scenario matrix\n\nEach cell: client (row) to server (column), the "
                    "transfer's every byte checked (tests/compliance/matrix.c).\n\n")
            f.write("| scenario | client | " + " | ".join(sides) + " |\n")
            f.write("|---|---|" + "---|" * len(sides) + "\n")
            for sc in scenario_names:
                for cl in sides:
                    row = []
                    for sv in sides:
                        c = grid.get((sc, cl, sv))
                        row.append("—" if c is None else
                                   ("pass %.0f ms" % c["ms"]) if c["pass"] else
                                   "**FAIL**: " + c["why"])
                    if any(x != "—" for x in row):
                        f.write("| %s | %s | %s |\n" % (sc, cl, " | ".join(row)))
            f.write("\n")
        if mutants is not None:
            f.write("## Mutants\n\n| mutant | caught by |\n|---|---|\n")
            for m in mutants:
                f.write("| %s | %s |\n" % (m["name"], ", ".join(m["caught_by"]) or "**none**"))
            f.write("\n")
        if uncovered:
            f.write("## MUSTs without a script\n\n")
            for r in uncovered:
                f.write("- %s (section %d)%s\n" % (r, reqs[r][2], ": checked by " + elsewhere[r]
                                                  if r in elsewhere else ": not checked"))
            f.write("\n")
        f.write("## Requirements\n\n| id | section | MUST | scripts |\n|---|---|---|---|\n")
        for rid in sorted(reqs, key=lambda r: int(r[2:])):
            cells = []
            for script, by in sorted(matrix.get(rid, {}).items()):
                cells.append("%s (%s)" % (script, ", ".join(
                    "%s %s" % (a, o if o != "fail" else "FAIL") for a, o in sorted(by.items()))))
            if not cells and rid in elsewhere:
                cells.append("outside the suite: " + elsewhere[rid])
            f.write("| %s | %d | %s | %s |\n"
                    % (rid, reqs[rid][2], "yes" if reqs[rid][1] else "", "; ".join(cells) or "—"))

    with open(outdir + "/junit.xml", "w") as f:
        f.write('<?xml version="1.0" encoding="UTF-8"?>\n<testsuites>\n')
        for run in runs:
            n_failed = sum(1 for r in run["results"] if outcome(r) == "fail")
            n_skipped = sum(1 for r in run["results"] if outcome(r) in ("skip", "known"))
            f.write('<testsuite name=%s tests="%d" failures="%d" skipped="%d">\n'
                    % (quoteattr("compliance." + run["adapter"]), len(run["results"]), n_failed,
                       n_skipped))
            for res in run["results"]:
                f.write('<testcase classname=%s name=%s>' % (quoteattr(run["adapter"]),
                                                             quoteattr(res["script"])))
                if outcome(res) == "fail":
                    f.write('<failure message=%s>line %d</failure>'
                            % (quoteattr(res["why"]), res["line"]))
                elif outcome(res) != "pass":
                    f.write('<skipped message=%s/>' % quoteattr(
                        res["why"] + ("; known: " + res["known"] if res.get("known") else "")))
                f.write("</testcase>\n")
            f.write("</testsuite>\n")
        if grid:
            f.write('<testsuite name="compliance.matrix" tests="%d" failures="%d">\n'
                    % (len(grid), len(matrix_failed)))
            for c in grid.values():
                f.write('<testcase classname="matrix" name=%s>' % quoteattr(
                    "%s %s -> %s" % (c["scenario"], c["client"], c["server"])))
                if not c["pass"]:
                    f.write('<failure message=%s/>' % quoteattr(c["why"]))
                f.write("</testcase>\n")
            f.write("</testsuite>\n")
        if mutants is not None:
            f.write('<testsuite name="compliance.mutants" tests="%d" failures="%d">\n'
                    % (len(mutants), sum(1 for m in mutants if not m["caught_by"])))
            for m in mutants:
                f.write('<testcase classname="mutants" name=%s>' % quoteattr(m["name"]))
                if not m["caught_by"]:
                    f.write('<failure message="no script caught it"/>')
                f.write("</testcase>\n")
            f.write("</testsuite>\n")
        f.write("</testsuites>\n")

    print("compliance: %d scripts on %s, %d failed, %d skipped, %d known deviations; MUSTs "
          "with a script: %d of %d (sections 2-12, 14, 15; %d more checked outside the suite)%s"
          % (len(scripts), ", ".join(summary["adapters"]), len(failed), len(skipped), len(known),
             len(musts) - len(uncovered), len(musts),
             sum(1 for r in uncovered if r in elsewhere),
             "; mutants caught: %d of %d" % (summary["mutants_caught"], len(mutants))
             if mutants is not None else ""))
    if never_passed:
        print("compliance: MUSTs whose scripts passed nowhere in this run (was an "
              "implementation's run skipped?): " + ", ".join(never_passed))
    if grid:
        print("compliance: scenario matrix %d cells (%d scenarios), %d failed"
              % (len(grid), len(scenario_names), len(matrix_failed)))
    for u in sorted(unknown):
        print("  %s names %s, which the specification does not" % u)
    # (a MUST only a daemon's run shows passes nowhere when that run was skipped, as without
    # root: said above, not a failure of what did run)
    ok = not failed and not unknown and not matrix_failed
    if mutants is not None:
        ok = ok and all(m["caught_by"] for m in mutants)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
