#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""Replays captured MetaRoCE packets, as an attacker on a link would (issue 20).

  replay.py capture IFNAME PORT MAX SECONDS FILE   the first MAX frames leaving IFNAME for
                                                   UDP port PORT (IPv4) within SECONDS, into
                                                   FILE; then each sent once more, as it was
  replay.py send IFNAME FILE                       FILE's frames sent out of IFNAME again

Run in the namespace whose interface it names (ip netns exec). The frames go out unchanged
but for their UDP checksum, set to 0 (none, valid for IPv4): a veth leaves outgoing
checksums to be finished, and a replayed half-finished one would be dropped by the receiving
kernel before the daemon could be tested; frames longer than the link's MTU (UDP GSO trains,
cut into datagrams only further on) are not captured. Prints what it did; exits non-zero if
it captured nothing.
"""
import socket
import struct
import sys
import time

ETH_P_ALL = 0x0003
PACKET_OUTGOING = 4


def metaroce_udp(frame, port):
    """The offset of the UDP header of an IPv4 UDP frame to `port`, or None."""
    if len(frame) < 14 + 20 + 8 or frame[12:14] != b"\x08\x00" or frame[23] != 17:
        return None
    udp = 14 + (frame[14] & 0x0f) * 4
    if len(frame) < udp + 8 or struct.unpack("!H", frame[udp + 2:udp + 4])[0] != port:
        return None
    return udp


def capture(ifname, port, most, seconds):
    # a UDP GSO train leaves as one frame longer than the link takes: not one a link carries
    with open("/sys/class/net/%s/mtu" % ifname) as f:
        longest = 14 + int(f.read())
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
    s.bind((ifname, 0))
    s.settimeout(0.2)
    frames, deadline = [], time.monotonic() + seconds
    while len(frames) < most and time.monotonic() < deadline:
        try:
            frame, addr = s.recvfrom(65535)
        except socket.timeout:
            continue
        if addr[2] != PACKET_OUTGOING or len(frame) > longest:
            continue
        udp = metaroce_udp(frame, port)
        if udp is not None:
            frames.append(frame[:udp + 6] + b"\x00\x00" + frame[udp + 8:])
    s.close()
    return frames


def send(ifname, frames):
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
    s.bind((ifname, 0))
    sent = 0
    for f in frames:
        for _ in range(200):  # a full queue (ENOBUFS) drains within milliseconds
            try:
                s.send(f)
                sent += 1
                break
            except OSError:
                time.sleep(0.001)
    s.close()
    return sent


def save(path, frames):
    with open(path, "wb") as f:
        for fr in frames:
            f.write(struct.pack("!I", len(fr)) + fr)


def load(path):
    frames = []
    with open(path, "rb") as f:
        data = f.read()
    at = 0
    while at + 4 <= len(data):
        n = struct.unpack("!I", data[at:at + 4])[0]
        frames.append(data[at + 4:at + 4 + n])
        at += 4 + n
    return frames


def main():
    if len(sys.argv) == 7 and sys.argv[1] == "capture":
        ifname, port, most, seconds, path = sys.argv[2], int(sys.argv[3]), \
            int(sys.argv[4]), float(sys.argv[5]), sys.argv[6]
        frames = capture(ifname, port, most, seconds)
        save(path, frames)
        sent = send(ifname, frames)
        print("captured %d, replayed %d" % (len(frames), sent))
        sys.exit(0 if frames else 1)
    if len(sys.argv) == 4 and sys.argv[1] == "send":
        frames = load(sys.argv[3])
        print("replayed %d of %d" % (send(sys.argv[2], frames), len(frames)))
        sys.exit(0 if frames else 1)
    sys.exit(__doc__)


if __name__ == "__main__":
    main()
