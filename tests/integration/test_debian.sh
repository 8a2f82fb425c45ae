# Debian packages: packaging/debian builds metaroce, libmetaroce1 and libmetaroce-dev with
# dpkg-buildpackage from a copy of the tree; unpacked into a scratch root, each holds what
# it should, and the installed metaroced and metaroce-ctl work together (status as JSON).
. "$(dirname "$0")/lib.sh"

command -v dpkg-buildpackage >/dev/null || fail "dpkg-buildpackage missing (make deps)"
[ -e /usr/share/perl5/Debian/Debhelper/Dh_Lib.pm ] || fail "debhelper missing (make deps)"
root=$(cd "$(dirname "$0")/../.." && pwd)
src="$TMP/src/metaroce-0.1.0"
mkdir -p "$src"
# the tracked files as they are in the working tree
(cd "$root" && git ls-files -z | tar --null -T - -cf -) | tar -xf - -C "$src"
mv "$src/packaging/debian" "$src/debian"
(cd "$src" && dpkg-buildpackage -us -uc -b >"$TMP/build.log" 2>&1) ||
	{ tail -n 30 "$TMP/build.log"; fail "dpkg-buildpackage"; }
for p in metaroce libmetaroce1 libmetaroce-dev; do
	deb=$(ls "$TMP"/src/${p}_0.1.0-1_*.deb 2>/dev/null) || fail "no $p package"
	dpkg-deb -c "$deb" | awk '{print $6}' >"$TMP/$p.files"
	dpkg-deb -x "$deb" "$TMP/root"
done
grep -q '/usr/sbin/metaroced$' "$TMP/metaroce.files" || fail "metaroce lacks the daemon"
grep -q '/usr/lib/systemd/system/metaroced.service$' "$TMP/metaroce.files" || fail "no unit"
grep -q '/etc/metaroce/metaroced.conf$' "$TMP/metaroce.files" || fail "no configuration"
grep -q '/usr/share/man/man8/metaroced.8' "$TMP/metaroce.files" || fail "no man page"
grep -q '/usr/lib/.*/libmetaroce.so.1.0.0$' "$TMP/libmetaroce1.files" || fail "no library"
grep -q '/usr/include/metaroce/metaroce.h$' "$TMP/libmetaroce-dev.files" || fail "no header"
grep -q '/usr/lib/.*/pkgconfig/libmetaroce.pc$' "$TMP/libmetaroce-dev.files" || fail "no .pc"
dpkg-deb -f "$TMP"/src/metaroce_0.1.0-1_*.deb Depends | grep -q 'libsystemd0' ||
	fail "metaroce does not depend on libsystemd0"

# the unpacked programs, together: a daemon in a namespace, metaroce-ctl -j status against it
two_hosts
ip netns exec "$NS_A" "$TMP/root/usr/sbin/metaroced" --set "plane=0 ${TAG}a0 198.18.0.1" \
	--set "control_socket=$TMP/a.sock" >"$TMP/a.log" 2>&1 &
PIDS="$PIDS $!"
wait_for "$TMP/a.log" "backend udp"
"$TMP/root/usr/sbin/metaroced" --version
"$TMP/root/usr/bin/metaroce-ctl" -S "$TMP/a.sock" -j status | python3 -c '
import json, sys
j = json.load(sys.stdin)
assert j["backend"] == "udp" and j["planes"][0]["address"] == "198.18.0.1", j
print("installed metaroce-ctl -j status: ok")' || fail "installed metaroce-ctl -j status"
echo PASS
