# Debian packages: packaging/build-deb.sh (make deb) builds metaroce, libmetaroce1 and
# libmetaroce-dev with dpkg-buildpackage from a copy of the tree; unpacked into a scratch
# root, each holds what it should, and the installed metaroced and metaroce-ctl work
# together (status as JSON). (The image and the manifests: tests/system/test_containers.sh.)
. "$(dirname "$0")/lib.sh"

command -v dpkg-buildpackage >/dev/null || fail "dpkg-buildpackage missing (make deps)"
[ -e /usr/share/perl5/Debian/Debhelper/Dh_Lib.pm ] || fail "debhelper missing (make deps)"
root=$(cd "$(dirname "$0")/../.." && pwd)
sh "$root/packaging/build-deb.sh" "$TMP/src" >"$TMP/build.log" 2>&1 ||
	{ cat "$TMP/build.log"; fail "packaging/build-deb.sh"; }
for p in metaroce libmetaroce1 libmetaroce-dev; do
	deb=$(ls "$TMP"/src/${p}_0.1.0-1_*.deb 2>/dev/null) || fail "no $p package"
	dpkg-deb -c "$deb" | awk '{print $6}' >"$TMP/$p.files"
	dpkg-deb -x "$deb" "$TMP/root"
done
grep -q '/usr/sbin/metaroced$' "$TMP/metaroce.files" || fail "metaroce lacks the daemon"
grep -q '/usr/lib/systemd/system/metaroced.service$' "$TMP/metaroce.files" || fail "no unit"
grep -q '/usr/lib/tmpfiles.d/metaroce.conf$' "$TMP/metaroce.files" ||
	fail "no tmpfiles.d entry (UCX's /dev/infiniband node)"
grep -q '/etc/metaroce/metaroced.conf$' "$TMP/metaroce.files" || fail "no configuration"
grep -q '/usr/share/man/man8/metaroced.8' "$TMP/metaroce.files" || fail "no man page"
grep -q '/usr/bin/metaroce-perf$' "$TMP/metaroce.files" || fail "metaroce lacks metaroce-perf"
grep -q '/usr/share/man/man1/metaroce-perf.1' "$TMP/metaroce.files" || fail "no metaroce-perf(1)"
grep -q '/usr/lib/.*/libmetaroce.so.1.0.0$' "$TMP/libmetaroce1.files" || fail "no library"
grep -q '/usr/include/metaroce/metaroce.h$' "$TMP/libmetaroce-dev.files" || fail "no header"
grep -q '/usr/lib/.*/pkgconfig/libmetaroce.pc$' "$TMP/libmetaroce-dev.files" || fail "no .pc"
dpkg-deb -f "$TMP"/src/metaroce_0.1.0-1_*.deb Depends | grep -q 'libsystemd0' ||
	fail "metaroce does not depend on libsystemd0"
dpkg-deb -f "$TMP"/src/metaroce_0.1.0-1_*.deb Depends | grep -q 'libibverbs1' ||
	fail "metaroce does not depend on libibverbs1 (metaroce-perf)"

# the unpacked programs, together: a daemon in a namespace, metaroce-ctl -j status against it
two_hosts
ip netns exec "$NS_A" "$TMP/root/usr/sbin/metaroced" --set "plane=0 ${TAG}a0 198.18.0.1" \
	--set "control_socket=$TMP/a.sock" >"$TMP/a.log" 2>&1 &
PIDS="$PIDS $!"
wait_for "$TMP/a.log" "$DAEMON_UP"
"$TMP/root/usr/sbin/metaroced" --version
# the backend the daemon says it took (auto: xdp where the kernel lets it attach), not assumed
backend=$(sed -n 's/.*node [0-9a-f]*: backend \([a-z]*\).*/\1/p' "$TMP/a.log")
"$TMP/root/usr/bin/metaroce-ctl" -S "$TMP/a.sock" -j status | python3 -c '
import json, sys
j = json.load(sys.stdin)
assert j["backend"] == sys.argv[1] and j["planes"][0]["address"] == "198.18.0.1", (sys.argv[1], j)
print("installed metaroce-ctl -j status: ok, backend", j["backend"])' "$backend" ||
	fail "installed metaroce-ctl -j status"
"$TMP/root/usr/bin/metaroce-perf" --version | grep -q '^metaroce-perf 0.1.0$' ||
	fail "installed metaroce-perf --version"
echo PASS
