# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""What `sockperf ping-pong` printed: its half-round-trip percentiles in microseconds, the
minimum, and how many round trips it counted (fabric_bench.py and latency_bench.py)."""
import re


def parse(text):
    """{"p50", "p99", "p99_9", "min", "round_trips"}: None for what the output lacks."""
    got = {}
    for line in text.splitlines():
        m = re.search(r"percentile (\d+\.\d+) =\s+([0-9.]+)", line)
        if m:
            got[m.group(1)] = float(m.group(2))
        m = re.search(r"<MIN> observation =\s+([0-9.]+)", line)
        if m:
            got["min"] = float(m.group(1))
        m = re.search(r"SentMessages=(\d+);\s*ReceivedMessages=(\d+)", line)
        if m:
            got["round_trips"] = int(m.group(2))
    return {"p50": got.get("50.000"), "p99": got.get("99.000"), "p99_9": got.get("99.900"),
            "min": got.get("min"), "round_trips": got.get("round_trips")}
