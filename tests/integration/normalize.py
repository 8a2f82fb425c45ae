# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# normalize.py TAG TMP < output: metaroce-ctl output with what changes from run to run
# (node ids, public keys, counters, times, ports, the test's interface names and directory,
# the XDP mode the kernel gave the program, column padding) replaced, so it can be compared
# with tests/integration/golden/.
import ipaddress
import re
import sys

tag, tmp = sys.argv[1], sys.argv[2]


def is_address(core):
    for parse in (ipaddress.ip_address, ipaddress.ip_network):
        try:
            parse(core.removeprefix("::ffff:") if "." in core else core)
            return True
        except ValueError:
            pass
    return False


def word(w):
    if is_address(w.strip('",;()[]{}')):
        return w  # addresses are part of the expected output
    w = re.sub(r"\b[0-9a-f]{16}\b", "NODE", w)
    # a daemon's public key (base64 of 32 bytes), new in every test
    w = re.sub(r"[A-Za-z0-9+/]{43}=", "KEY", w)
    # counters, times, sizes, ports; not the digits of names such as metaroce0 or v2
    return re.sub(r"(?<![A-Za-z_])\d+(\.\d+)?(e[+-]?\d+)?", "N", w)


for line in sys.stdin:
    line = line.replace(tmp, "TMP").replace(tag, "TAG")
    # an interface's XDP mode, native where its driver has XDP and generic (skb) where not, as
    # status ("TAGa0 native") and xdp show ("XDP native") say it
    line = re.sub(r"\b(XDP|TAG\w+) (?:native|generic \(skb\)|generic)(?!\w)", r"\1 MODE", line)
    # the backend the test asked for (config show): xdp where it attaches, else udp
    line = re.sub(r"^backend = (?:xdp|udp)$", "backend = BACKEND", line)
    indent = len(line) - len(line.lstrip(" "))
    sys.stdout.write(" " * indent + " ".join(word(w) for w in line.split()) + "\n")
