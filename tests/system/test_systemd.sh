# metaroced under a real systemd (make test-systemd): a Debian rootfs (mmdebstrap minbase,
# the mirror read from this machine's apt sources) gets our .debs with apt and boots, twice,
# under systemd-nspawn, one host on each side of a two-plane testbed. `systemctl enable --now
# metaroced` (backend = xdp) must bring both to active (running) with our STATUS line and the
# program on every plane; `systemctl reload` must reread the configuration (a bad file keeps
# the old one and the journal says why); the watchdog must restart a SIGSTOPped daemon; the
# journal must carry the daemon's lines at their priorities; README's unmodified programs
# (ibv_rc_pingpong, metaroce-perf, rping) run by a member of the service's group must move
# verified data between the hosts (and a user outside it be refused); `systemctl stop` must give a running client a flush error, not a
# hang; and the unit's hardening must hold: its capabilities are those it documents, each one
# shown needed by taking it away, and systemd-analyze's score is printed. Everything made is
# removed, also on failure.
. "$(dirname "$0")/../integration/lib.sh"

root=$(cd "$(dirname "$0")/../.." && pwd)
command -v systemd-nspawn >/dev/null || fail "systemd-nspawn missing (make deps)"
command -v mmdebstrap >/dev/null || fail "mmdebstrap missing (make deps)"
[ "$(id -u)" -eq 0 ] || skip "needs root to boot a container"

NSPAWN_RUN_DIR_WAS=$([ -d /run/systemd/nspawn ] && echo yes || echo no)
NSPAWN_PIDS=""
CGROUP_DIRS=""

# cgroup_dirs NAME: a new cgroup NAME beside this shell's, in each hierarchy systemd manages
# (name=systemd and the unified one on a cgroup v1 "hybrid" host, the unified one on v2).
# Each container boots in one of its own: two systemds in one cgroup take each other's
# processes for theirs, and units fail at boot (status=219/CGROUP).
cgroup_dirs() {
	while IFS=: read -r _ hierarchy path; do
		case $hierarchy in
		name=systemd) m=/sys/fs/cgroup/systemd ;;
		"") m=/sys/fs/cgroup/unified
		    [ "$(stat -f -c %T $m 2>/dev/null)" = cgroup2fs ] || m=/sys/fs/cgroup ;;
		*) continue ;;
		esac
		case $(stat -f -c %T "$m" 2>/dev/null) in
		cgroupfs | cgroup2fs) echo "$m${path%/}/$1" ;;
		esac
	done </proc/self/cgroup
}
# new_cgroup NAME: makes cgroup NAME (cgroup_dirs), for cleanup to remove, as CGROUP
new_cgroup() {
	CGROUP=$(echo $(cgroup_dirs "metaroce-${TAG}$1"))
	[ -n "$CGROUP" ] || fail "no cgroup hierarchy of systemd's in /proc/self/cgroup"
	CGROUP_DIRS="$CGROUP_DIRS $CGROUP"
	mkdir $CGROUP || fail "cgroups: $CGROUP"
}
# sh -c "$IN_CGROUP" sh CMD...: CMD in the cgroup new_cgroup made last, as the same process
# (in the background, $! is CMD's own PID)
IN_CGROUP='for d in $CGROUP; do echo $$ >"$d/cgroup.procs" || exit 1; done && exec "$@"'

# A container powers off as a machine does (nspawn forwards SIGTERM as a halt request); one
# that does not is killed, and its PID namespace with it.
system_cleanup() {
	for p in $NSPAWN_PIDS; do kill -TERM "$p" 2>/dev/null; done
	for p in $NSPAWN_PIDS; do
		# waits for the process itself, for 10 s at most
		timeout 10 tail --pid="$p" -f /dev/null
		for l in $(ps -o pid= --ppid "$p"); do kill -KILL "$l"; done 2>/dev/null
		kill -KILL "$p" 2>/dev/null
		# gone before its cgroups are removed (a cgroup with a process in it stays)
		timeout 10 tail --pid="$p" -f /dev/null
	done
	# nspawn leaves a directory per machine it ran under /run/systemd/nspawn/propagate
	for m in a b apt; do rm -rf "/run/systemd/nspawn/propagate/${TAG}$m"; done
	[ "$NSPAWN_RUN_DIR_WAS" = yes ] || rm -rf /run/systemd/nspawn
	# the containers' cgroups, the ones their systemds made inside first
	for d in $CGROUP_DIRS; do
		[ ! -d "$d" ] || find "$d" -depth -type d -exec rmdir {} +
	done
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

# --- our packages, installed with apt, and the users of README's "Run it for real" ---------
# alice is in the group the service is given (rdma, which libibverbs1 makes), bob is not;
# ibverbs-utils and rdmacm-utils bring README's unmodified programs, ibv_rc_pingpong and rping
# (DEBS: a directory make deb filled, as make test-systemd passes; else built here)
debs=${DEBS:-$TMP/debs}
if [ -z "${DEBS:-}" ]; then
	sh "$root/packaging/build-deb.sh" "$debs" >"$TMP/build-deb.log" 2>&1 ||
		{ tail -20 "$TMP/build-deb.log"; fail "packaging/build-deb.sh"; }
fi
cp -a "$base" "$TMP/a"
mkdir -p "$TMP/a/root/debs"
cp "$debs"/metaroce_*.deb "$debs"/libmetaroce1_*.deb "$TMP/a/root/debs/" ||
	fail "no metaroce and libmetaroce1 packages in $debs"
new_cgroup apt
CGROUP=$CGROUP sh -c "$IN_CGROUP" sh systemd-nspawn --register=no --keep-unit -q -D "$TMP/a" -M "${TAG}apt" sh -c 'apt-get update -qq &&
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
		/root/debs/*.deb ibverbs-utils rdmacm-utils &&
	{ getent group rdma || groupadd --system rdma; } && useradd --groups rdma alice && useradd bob' \
	>"$TMP/apt.log" 2>&1 || { tail -20 "$TMP/apt.log"; fail "apt-get install of our packages"; }
cp -a "$TMP/a" "$TMP/b"

# --- two hosts on a testbed: A and B, each with planes 0 and 1 ---------------------------------
two_hosts
for h in a b; do
	n=$([ $h = a ] && echo 1 || echo 2)
	conf="$TMP/$h/etc/metaroce/metaroced.conf"
	sed -i 's/^backend = .*/backend = xdp/' "$conf"
	printf 'plane = 0 %s 198.18.0.%s\nplane = 1 %s 198.19.0.%s\npeer_prefix = 198.18.0.0/15\n' \
		"${TAG}${h}0" $n "${TAG}${h}1" $n >>"$conf"
	# README step 3: the group whose members may use the daemon
	mkdir -p "$TMP/$h/etc/systemd/system/metaroced.service.d"
	printf '[Service]\nGroup=rdma\n' >"$TMP/$h/etc/systemd/system/metaroced.service.d/group.conf"
	# no bpffs: the program runs alone on each plane, held by a BPF link
	new_cgroup $h
	CGROUP=$CGROUP sh -c "$IN_CGROUP" sh systemd-nspawn --boot --register=no --keep-unit -D "$TMP/$h" -M "${TAG}$h" \
		--network-namespace-path="/run/netns/${TAG}$h" --console=passive \
		--capability=CAP_NET_ADMIN,CAP_BPF,CAP_PERFMON,CAP_NET_RAW,CAP_IPC_LOCK \
		--system-call-filter=bpf >"$TMP/boot-$h.log" 2>&1 &
	NSPAWN_PIDS="$NSPAWN_PIDS $!"
	eval "NSPAWN_$h=$!"
done
# leader H: LEADER_H is the container's PID 1 once it is systemd (nspawn's first child execs it)
leader() {
	l=$(ps -o pid=,comm= --ppid "$(eval echo "\$NSPAWN_$1")" | awk '$2 == "systemd" {print $1; exit}')
	[ -n "$l" ] && eval "LEADER_$1=$l"
}
# on H CMD...: runs CMD in every namespace of host H
on() {
	l=$(eval echo "\$LEADER_$1")
	shift
	nsenter -t "$l" -a "$@"
}
booted() { on "$1" systemctl is-system-running | grep -Eq '^(running|degraded)$'; }
for h in a b; do
	wait_until 20 "host $h's init" leader $h
	wait_until 60 "host $h's boot" booted $h
	on $h systemctl --failed --no-legend >"$TMP/failed"
	[ ! -s "$TMP/failed" ] || {
		cat "$TMP/failed"
		for u in $(awk '{print ($1 == "●" ? $2 : $1)}' "$TMP/failed"); do
			on $h journalctl -b -u "$u" --no-pager | tail -n 5
		done
		fail "units failed at boot on $h"
	}
done
echo "  booted A and B: systemd $(on a systemctl --version | head -n 1 | cut -d' ' -f2) as PID 1"

prop() { on "$1" systemctl show -p "$2" --value metaroced; }
running() { [ "$(prop "$1" ActiveState)/$(prop "$1" SubState)" = active/running ]; }
# xdp_everywhere H: host H's daemon runs the program on every plane, each with AF_XDP sockets
# (-j xdp; its note names the planes that went without)
xdp_everywhere() {
	on "$1" metaroce-ctl -j xdp | python3 -c '
import json, sys
j = json.load(sys.stdin)
sys.exit(not (j["backend"] == "xdp" and all(p["xdp"] for p in j["planes"])
              and j["af_xdp"]["sockets"] >= len(j["planes"]) and "AF_XDP" not in j["note"]))'
}
for h in a b; do
	on $h systemctl enable --now metaroced >"$TMP/enable.log" 2>&1 ||
		{ cat "$TMP/enable.log"; on $h journalctl -u metaroced --no-pager | tail; fail "enable --now on $h"; }
	running $h || fail "$h not active (running): $(prop $h ActiveState)/$(prop $h SubState)"
	status=$(prop $h StatusText)
	[ "$status" = "backend xdp, 2 planes, port 4792" ] || fail "STATUS on $h: '$status'"
	xdp_everywhere $h || fail "$h: not every plane runs XDP with AF_XDP: $(on $h metaroce-ctl status)"
done
echo "  active (running), STATUS=$status; $(on a metaroce-ctl status | head -n 1 | sed "s/^node [0-9a-f]*  //")"
on a systemctl status metaroced --no-pager | head -n 9 | sed 's/^/    /'

# --- the journal: the daemon's own lines at their priorities ---------------------------------
journal_has() { # PRIORITY_MAX PATTERN: a line of A's daemon matching, at that priority or above
	on a journalctl -u metaroced -o json --no-pager | python3 -c '
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
on a journalctl -u metaroced -o json --no-pager | python3 -c '
import json, sys
for line in sys.stdin:
    j = json.loads(line)
    if j.get("SYSLOG_IDENTIFIER") == "metaroced":
        assert not j["MESSAGE"].startswith("<"), "a level prefix reached the journal: " + j["MESSAGE"]
' || fail "SyslogLevelPrefix: a prefix left in a message"

# --- an unmodified verbs program, run by a member of the service's group ----------------------
as_alice() { h=$1; shift; on "$h" runuser -u alice -- timeout 60 metaroce-run "$@"; }
on b metaroce-ctl -j xdp >"$TMP/xdp0.json"
as_alice b ibv_rc_pingpong -g 0 -c -s 65536 -n 200 >"$TMP/pp.server.log" 2>&1 &
srv=$!
PIDS="$PIDS $srv"
wait_listening "$NS_B" 18515 # its client tries once
as_alice a ibv_rc_pingpong -g 0 -c -s 65536 -n 200 198.18.0.2 >"$TMP/pp.client.log" 2>&1 ||
	{ cat "$TMP/pp.client.log" "$TMP/pp.server.log"; fail "ibv_rc_pingpong client (as alice on A)"; }
wait "$srv" || { cat "$TMP/pp.server.log"; fail "ibv_rc_pingpong server (as alice on B)"; }
for l in client server; do
	grep -q "^26214400 bytes in .* seconds" "$TMP/pp.$l.log" &&
		! grep -qi "invalid data" "$TMP/pp.$l.log" ||
		{ cat "$TMP/pp.$l.log"; fail "ibv_rc_pingpong $l: not 200 verified exchanges of 64 KiB"; }
done
# B's AF_XDP sockets took the data in
on b metaroce-ctl -j xdp | python3 -c '
import json, sys
before, after = json.load(open(sys.argv[1])), json.load(sys.stdin)
rx = after["af_xdp"]["rx"] - before["af_xdp"]["rx"]
print("  ibv_rc_pingpong as alice (group rdma): 200 x 64 KiB verified, B took %d frames by AF_XDP" % rx)
assert rx >= 200 * 65536 // 1500, "B took %d frames by AF_XDP" % rx' "$TMP/xdp0.json" ||
	fail "the transfer did not go through the XDP fast path"
# README step 4's other two: metaroce-perf on 8 QPs, every byte checked, and rping (rdma_cm)
as_alice b metaroce-perf -n 200 >"$TMP/perf.server.log" 2>&1 &
srv=$!
PIDS="$PIDS $srv"
wait_listening "$NS_B" 18700
as_alice a metaroce-perf -t write -q 8 -n 200 -V -j 198.18.0.2 >"$TMP/perf.json" \
	2>"$TMP/perf.client.log" || { cat "$TMP/perf.client.log"; fail "metaroce-perf client (as alice on A)"; }
wait "$srv" || { cat "$TMP/perf.server.log"; fail "metaroce-perf server (as alice on B)"; }
python3 -c '
import json, sys
j = json.load(open(sys.argv[1]))
print("  metaroce-perf -t write -q 8 -V: %d messages of %d B, %d verified by B, %d errors, %.2f Gbit/s"
      % (j["messages"], j["size"], j["peer"]["verified"], j["errors"], j["gbps"]))
sys.exit(not (j["messages"] == 1600 and j["peer"]["verified"] == 1600 and j["errors"] == 0))' \
	"$TMP/perf.json" || fail "metaroce-perf between the hosts"
as_alice b rping -s -V -C 1000 -a 0.0.0.0 >"$TMP/rping.server.log" 2>&1 &
srv=$!
PIDS="$PIDS $srv"
cm_listening() {
	on b metaroce-ctl -j cm | python3 -c '
import json, sys
sys.exit(not any(i["state"] == "listen" and i["local_port"] == 7174 for i in json.load(sys.stdin)["cm_ids"]))'
}
wait_until 10 "rping's rdma_cm listener on B" cm_listening
as_alice a rping -c -V -C 1000 -a 198.18.0.2 >"$TMP/rping.client.log" 2>&1 ||
	{ cat "$TMP/rping.client.log"; fail "rping client (as alice on A)"; }
wait "$srv" || { cat "$TMP/rping.server.log"; fail "rping server (as alice on B)"; }
! grep -q "data mismatch" "$TMP/rping.client.log" "$TMP/rping.server.log" || fail "rping: data mismatch"
echo "  rping -V -C 1000 through rdma_cm: 1000 verified pings"
on a runuser -u bob -- metaroce-run ibv_devices >"$TMP/bob.log" 2>&1
grep -q "cannot reach metaroced at /run/metaroce/metaroced.sock: Permission denied" "$TMP/bob.log" ||
	{ cat "$TMP/bob.log"; fail "bob, outside the group, was not refused"; }
echo "  bob, outside the group: $(head -n 1 "$TMP/bob.log")"

# --- reload: a good file is reread, a bad one leaves the running configuration -------------
conf="$TMP/a/etc/metaroce/metaroced.conf"
printf 'peer_prefix = 10.99.0.0/16\n' >>"$conf"
on a systemctl reload metaroced || fail "systemctl reload"
wait_until 10 "the reload's journal line" journal_has 6 'reloaded /etc/metaroce/metaroced.conf: 2 peer prefixes'
echo "this is not a setting" >>"$conf"
on a systemctl reload metaroced || fail "systemctl reload of a bad file"
wait_until 10 "the refused reload's journal line" journal_has 4 \
	"reload failed, keeping the running configuration: .*metaroced.conf:[0-9]+: expected 'key = value'"
running a || fail "a bad configuration stopped the daemon"
sed -i '$d' "$conf"
echo "  reload: a good file reread, a bad one refused and named in the journal"

# --- the watchdog restarts a daemon that stops answering ------------------------------------
pid=$(prop a MainPID)
on a sh -c "kill -STOP $pid"
restarted() { [ "$(prop a NRestarts)" = 1 ] && [ "$(prop a MainPID)" != "$pid" ] && running a; }
wait_until 40 "the watchdog's restart of a stopped daemon" restarted
on a journalctl -u metaroced --no-pager | grep -q "Failed with result 'watchdog'" ||
	fail "the restart was not the watchdog's"
# the killed daemon's programs went with it: the new one attached its own
xdp_everywhere a || fail "after the watchdog's restart: $(on a metaroce-ctl status)"
echo "  watchdog: SIGSTOPped daemon restarted (MainPID $pid -> $(prop a MainPID)), XDP on both planes"

# --- systemctl stop under a running client: a flush error, not a hang ----------------------
datagrams_in() { on "$1" metaroce-ctl status | sed -n 's/.*datagrams in \([0-9]*\).*/\1/p'; }
flowing() { [ "$(datagrams_in b)" -gt "$((in0 + 1000))" ]; }
as_alice b ibv_rc_pingpong -g 0 -n 100000000 >"$TMP/long.server.log" 2>&1 &
PIDS="$PIDS $!"
wait_listening "$NS_B" 18515
in0=$(datagrams_in b)
as_alice a ibv_rc_pingpong -g 0 -n 100000000 198.18.0.2 >"$TMP/long.client.log" 2>&1 &
client=$!
PIDS="$PIDS $client"
wait_until 20 "ibv_rc_pingpong's traffic" flowing
on a systemctl stop metaroced
wait_until 10 "A's client to end after systemctl stop (a hang)" gone "$client"
! wait "$client" || fail "A's client succeeded though its daemon stopped"
grep -q "Failed status Work Request Flushed Error" "$TMP/long.client.log" ||
	{ cat "$TMP/long.client.log"; fail "A's client saw no flush completion"; }
echo "  systemctl stop under load: the client saw '$(grep -m1 "Failed status" "$TMP/long.client.log")'"
# programs_left H: host H's plane interfaces that still run an XDP program (the container
# has no ip(8); it shares the testbed's network namespace)
programs_left() {
	ip -n "${TAG}$1" -o link show | awk '/prog\/xdp/ {sub(/@.*/, "", $2); print $2}'
}
[ -z "$(programs_left a)" ] || fail "a stopped daemon left its XDP program on $(programs_left a)"
on a systemctl start metaroced || fail "start after stop"

# --- hardening: the documented capabilities, each one needed --------------------------------
caps=$(on a cat "/proc/$(prop a MainPID)/status" | python3 -c '
import sys
names = {12: "CAP_NET_ADMIN", 13: "CAP_NET_RAW", 14: "CAP_IPC_LOCK", 38: "CAP_PERFMON", 39: "CAP_BPF"}
for line in sys.stdin:
    k, _, v = line.partition(":")
    if k in ("CapBnd", "CapEff", "CapAmb"):
        have = int(v, 16)
        print(k, " ".join(names.get(i, "cap%d" % i) for i in range(64) if have >> i & 1))')
echo "$caps" | sed 's/^/  /'
documented="CAP_NET_ADMIN CAP_NET_RAW CAP_IPC_LOCK CAP_PERFMON CAP_BPF"
[ "$(echo "$caps" | grep -c "^Cap[A-Za-z]* $documented\$")" -eq 3 ] ||
	fail "capabilities are not the documented five"
# without_cap CAP PATTERN: with CAP taken away by a drop-in, A's journal says PATTERN. The
# locked-memory limit is pinned at 8 MiB, one AF_XDP socket's worth, as a container has it
# (here systemd cannot raise it anyway; on a host it could, and CAP_IPC_LOCK would not show).
dropin=/run/systemd/system/metaroced.service.d/caps.conf
without_cap() {
	set_=$(echo $documented | tr ' ' '\n' | grep -vx "$1" | tr '\n' ' ')
	on a mkdir -p "${dropin%/*}"
	on a sh -c "printf '[Service]\nLimitMEMLOCK=8M\nCapabilityBoundingSet=\nCapabilityBoundingSet=%s\nAmbientCapabilities=\nAmbientCapabilities=%s\n' '$set_' '$set_' >$dropin"
	on a systemctl daemon-reload
	# the failed starts before count towards the unit's start limit: forgotten
	on a systemctl reset-failed metaroced
	on a systemctl restart metaroced 2>/dev/null
	wait_until 10 "A's journal on starting without $1" journal_has 5 "$2"
	echo "  without $1: $(echo "$2" | sed 's/\\//g; s/\.\*/…/g')"
}
lacks="cannot start: backend xdp: attaching XDP to ${TAG}a0: loading and attaching the program needs CAP_NET_ADMIN, CAP_BPF and CAP_PERFMON, and this process lacks"
without_cap CAP_BPF "$lacks CAP_BPF"
without_cap CAP_PERFMON "$lacks CAP_PERFMON"
without_cap CAP_NET_ADMIN "$lacks CAP_NET_ADMIN"
without_cap CAP_NET_RAW "worker 0: no AF_XDP sockets \(${TAG}a0 queue 0: an AF_XDP socket needs CAP_NET_RAW"
without_cap CAP_IPC_LOCK "AF_XDP on 1 of 2 planes.*${TAG}a1 queue 0: the locked-memory limit .* is spent"
on a rm "$dropin"
on a systemctl daemon-reload
on a systemctl reset-failed metaroced
on a systemctl restart metaroced || fail "restart with the unit's own capabilities"
xdp_everywhere a || fail "with the unit's capabilities again: $(on a metaroce-ctl status)"
on a systemd-analyze security metaroced --no-pager >"$TMP/security" 2>&1
score=$(sed -n 's/.*Overall exposure level for metaroced.service: \([0-9.]*\) \([A-Z]*\).*/\1 \2/p' \
	"$TMP/security")
[ -n "$score" ] || { tail "$TMP/security"; fail "no systemd-analyze security score"; }
echo "  systemd-analyze security metaroced: exposure $score"

for h in a b; do
	on $h systemctl stop metaroced
	[ "$(prop $h ActiveState)" = inactive ] || fail "stop on $h: $(prop $h ActiveState)"
	[ -z "$(programs_left $h)" ] || fail "stopped, $h left its XDP program on $(programs_left $h)"
done
echo "  stopped, no XDP program left on either host"
