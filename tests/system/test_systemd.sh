# metaroced under a real systemd (make test-systemd): a Debian rootfs (mmdebstrap minbase,
# the mirror read from this machine's apt sources) gets our .debs with apt and boots under
# systemd-nspawn in a testbed network namespace; `systemctl enable --now metaroced` must
# bring it to active (running) with our STATUS line, `systemctl reload` must reread the
# configuration (a bad file keeps the old one and the journal says why), the watchdog must
# restart a SIGSTOPped daemon, the journal must carry the daemon's lines at their priorities,
# and the unit's hardening must hold (capabilities as documented; systemd-analyze's score is
# printed). Everything made is removed, also on failure.
. "$(dirname "$0")/../integration/lib.sh"

root=$(cd "$(dirname "$0")/../.." && pwd)
command -v systemd-nspawn >/dev/null || fail "systemd-nspawn missing (make deps)"
command -v mmdebstrap >/dev/null || fail "mmdebstrap missing (make deps)"
[ "$(id -u)" -eq 0 ] || skip "needs root to boot a container"

NSPAWN_RUN_DIR_WAS=$([ -d /run/systemd/nspawn ] && echo yes || echo no)
NSPAWN_PID=""
LEADER=""

# The container powers off as a machine does (nspawn forwards SIGTERM as a halt request);
# a container that does not is killed with its whole PID namespace.
system_cleanup() {
	if [ -n "$NSPAWN_PID" ] && kill -0 "$NSPAWN_PID" 2>/dev/null; then
		kill -TERM "$NSPAWN_PID" 2>/dev/null
		# waits for the process itself, for 10 s at most
		timeout 10 tail --pid="$NSPAWN_PID" -f /dev/null
		[ -z "$LEADER" ] || kill -KILL "$LEADER" 2>/dev/null
		kill -KILL "$NSPAWN_PID" 2>/dev/null
	fi
	# nspawn leaves a directory per machine it ran under /run/systemd/nspawn/propagate
	rm -rf "/run/systemd/nspawn/propagate/${TAG}" "/run/systemd/nspawn/propagate/${TAG}apt"
	[ "$NSPAWN_RUN_DIR_WAS" = yes ] || rm -rf /run/systemd/nspawn
	cleanup
}
trap system_cleanup EXIT INT TERM

# --- the rootfs: minbase Debian with systemd, made once per build directory ---------------
# The mirror is this machine's, read at run time, never written into the project.
mirror=$(awk '/^URIs:/ {print $2; exit}' /etc/apt/sources.list.d/*.sources 2>/dev/null)
[ -n "$mirror" ] || mirror=$(awk '$1 == "deb" {print $2; exit}' /etc/apt/sources.list 2>/dev/null)
[ -n "$mirror" ] || fail "no Debian mirror in /etc/apt/sources.list.d/*.sources or sources.list"
suite=$(. /etc/os-release && echo "$VERSION_CODENAME")
include=systemd,systemd-sysv,dbus
base="$BUILD/system/rootfs-$suite"
if [ "$(cat "$base.stamp" 2>/dev/null)" != "$suite $include" ]; then
	rm -rf "$base" "$base.stamp"
	mkdir -p "$BUILD/system"
	mmdebstrap --variant=minbase --include="$include" "$suite" "$base" "$mirror" \
		>"$TMP/mmdebstrap.log" 2>&1 || { tail -20 "$TMP/mmdebstrap.log"; fail "mmdebstrap"; }
	echo "$suite $include" >"$base.stamp"
fi

# --- our packages, installed with apt --------------------------------------------------------
sh "$root/packaging/build-deb.sh" "$TMP/debs" >"$TMP/build-deb.log" 2>&1 ||
	{ tail -20 "$TMP/build-deb.log"; fail "packaging/build-deb.sh"; }
host="$TMP/host-a"
cp -a "$base" "$host"
mkdir -p "$host/root/debs"
cp "$TMP"/debs/metaroce_*.deb "$TMP"/debs/libmetaroce1_*.deb "$host/root/debs/"
systemd-nspawn --register=no --keep-unit -q -D "$host" -M "${TAG}apt" sh -c 'apt-get update -qq &&
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends /root/debs/*.deb' \
	>"$TMP/apt.log" 2>&1 || { tail -20 "$TMP/apt.log"; fail "apt-get install of our packages"; }

# --- boot it on host A of a testbed ------------------------------------------------------------
two_hosts
conf="$host/etc/metaroce/metaroced.conf"
printf 'plane = 0 %s 198.18.0.1\npeer_prefix = 198.18.0.0/16\n' "${TAG}a0" >>"$conf"
systemd-nspawn --boot --register=no --keep-unit -D "$host" -M "${TAG}" \
	--network-namespace-path="/run/netns/$NS_A" --console=passive \
	--capability=CAP_NET_ADMIN,CAP_BPF,CAP_PERFMON,CAP_NET_RAW,CAP_IPC_LOCK \
	--system-call-filter=bpf --bind=/sys/fs/bpf >"$TMP/boot.log" 2>&1 &
NSPAWN_PID=$!
# the container's PID 1 once it is systemd (nspawn's first child execs it after setting up)
leader() {
	LEADER=$(ps -o pid=,comm= --ppid "$NSPAWN_PID" | awk '$2 == "systemd" {print $1; exit}')
	[ -n "$LEADER" ]
}
wait_until 20 "the container's init" leader
X() { nsenter -t "$LEADER" -a "$@"; }
booted() { X systemctl is-system-running | grep -Eq '^(running|degraded)$'; }
wait_until 60 "the container's boot" booted
X systemctl --failed --no-legend >"$TMP/failed"
[ ! -s "$TMP/failed" ] || { cat "$TMP/failed"; fail "units failed at boot"; }
echo "  booted: systemd $(X systemctl --version | head -n 1 | cut -d' ' -f2) as PID 1"

prop() { X systemctl show -p "$1" --value metaroced; }
running() { [ "$(prop ActiveState)/$(prop SubState)" = active/running ]; }
X systemctl enable --now metaroced >"$TMP/enable.log" 2>&1 ||
	{ cat "$TMP/enable.log"; X journalctl -u metaroced --no-pager | tail; fail "enable --now"; }
running || fail "not active (running): $(prop ActiveState)/$(prop SubState)"
status=$(prop StatusText)
echo "$status" | grep -Eq '^backend (udp|xdp), 1 planes, port 4792$' || fail "STATUS: '$status'"
echo "  active (running), STATUS=$status"

# --- the journal: the daemon's own lines at their priorities ---------------------------------
journal_has() { # PRIORITY_MAX PATTERN: a line of the daemon's matching, at that priority or above
	X journalctl -u metaroced -o json --no-pager | python3 -c '
import json, re, sys
most, pat = int(sys.argv[1]), re.compile(sys.argv[2])
for line in sys.stdin:
    j = json.loads(line)
    if j.get("SYSLOG_IDENTIFIER") == "metaroced" and pat.search(j.get("MESSAGE", "")) \
            and int(j.get("PRIORITY", 7)) <= most:
        sys.exit(0)
sys.exit(1)' "$1" "$2"
}
journal_has 6 'node [0-9a-f]+: backend' || fail "no start-up line at info"
journal_has 4 'auth off: nothing is authenticated' || fail "auth off is not a warning"
X journalctl -u metaroced -o json --no-pager | python3 -c '
import json, sys
for line in sys.stdin:
    j = json.loads(line)
    if j.get("SYSLOG_IDENTIFIER") == "metaroced":
        assert not j["MESSAGE"].startswith("<"), "a level prefix reached the journal: " + j["MESSAGE"]
' || fail "SyslogLevelPrefix: a prefix left in a message"

# --- reload: a good file is reread, a bad one leaves the running configuration -------------
printf 'peer_prefix = 198.19.0.0/16\n' >>"$conf"
X systemctl reload metaroced || fail "systemctl reload"
wait_until 10 "the reload's journal line" journal_has 6 'reloaded /etc/metaroce/metaroced.conf: 2 peer prefixes'
echo "this is not a setting" >>"$conf"
X systemctl reload metaroced || fail "systemctl reload of a bad file"
wait_until 10 "the refused reload's journal line" journal_has 4 \
	"reload failed, keeping the running configuration: .*metaroced.conf:[0-9]+: expected 'key = value'"
running || fail "a bad configuration stopped the daemon"
sed -i '$d' "$conf"
echo "  reload: a good file reread, a bad one refused and named in the journal"

# --- the watchdog restarts a daemon that stops answering ------------------------------------
pid=$(prop MainPID)
X sh -c "kill -STOP $pid"
restarted() { [ "$(prop NRestarts)" = 1 ] && [ "$(prop MainPID)" != "$pid" ] && running; }
wait_until 40 "the watchdog's restart of a stopped daemon" restarted
X journalctl -u metaroced --no-pager | grep -q "Failed with result 'watchdog'" ||
	fail "the restart was not the watchdog's"
echo "  watchdog: SIGSTOPped daemon restarted (MainPID $pid -> $(prop MainPID))"

# --- hardening: the capabilities the unit documents, nothing more ---------------------------
caps=$(X cat "/proc/$(prop MainPID)/status" | python3 -c '
import sys
names = {12: "CAP_NET_ADMIN", 13: "CAP_NET_RAW", 38: "CAP_PERFMON", 39: "CAP_BPF"}
for line in sys.stdin:
    k, _, v = line.partition(":")
    if k in ("CapBnd", "CapEff", "CapAmb"):
        have = int(v, 16)
        print(k, " ".join(names.get(i, "cap%d" % i) for i in range(64) if have >> i & 1))')
echo "$caps" | sed 's/^/  /'
[ "$(echo "$caps" | grep -c ' CAP_NET_ADMIN CAP_NET_RAW CAP_PERFMON CAP_BPF$')" -eq 3 ] ||
	fail "capabilities are not the documented four"
X systemd-analyze security metaroced --no-pager >"$TMP/security" 2>&1
score=$(sed -n 's/.*Overall exposure level for metaroced.service: \([0-9.]*\) \([A-Z]*\).*/\1 \2/p' \
	"$TMP/security")
[ -n "$score" ] || { tail "$TMP/security"; fail "no systemd-analyze security score"; }
echo "  systemd-analyze security metaroced: exposure $score"

X systemctl stop metaroced
[ "$(prop ActiveState)" = inactive ] || fail "stop: $(prop ActiveState)"
echo "  stopped"
