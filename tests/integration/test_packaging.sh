# The shipped files: the systemd unit passes systemd-analyze verify, the default
# configuration parses (with one plane added, as an operator would), and `make install`
# into a scratch root gives working programs, a versioned library with its pkg-config file
# and header (a program builds and links against them), and man pages groff reads cleanly.
. "$(dirname "$0")/lib.sh"

command -v systemd-analyze >/dev/null || skip "systemd-analyze is not installed"
root=$(cd "$(dirname "$0")/../.." && pwd)
mkdir -p "$TMP/usr/sbin"
cp "$BUILD/sbin/metaroced" "$TMP/usr/sbin/metaroced"
sed "s|/usr/sbin/metaroced|$TMP/usr/sbin/metaroced|" "$root/packaging/systemd/metaroced.service" \
	>"$TMP/metaroced.service"
systemd-analyze verify "$TMP/metaroced.service" >"$TMP/verify.log" 2>&1
# verify also complains about units it cannot see in a test sandbox; only our unit counts
if grep "metaroced.service" "$TMP/verify.log"; then
	fail "systemd-analyze verify found problems in the unit"
fi

# The default file parses as shipped (no plane yet: the daemon refuses to start, saying why)
"$BUILD/sbin/metaroced" -c "$root/packaging/config/metaroced.conf" \
	--set control_socket="$TMP/c.sock" >"$TMP/out.log" 2>&1
[ $? -eq 2 ] || fail "the shipped config without a plane did not exit 2"
grep -q "no plane is configured: add 'plane = 0 IFNAME ADDRESS'" "$TMP/out.log" ||
	fail "unexpected message: $(cat "$TMP/out.log")"
# make install into a scratch root, as a package build would
dest="$TMP/root"
make -s -C "$root" install DESTDIR="$dest" PREFIX=/usr BUILD="$BUILD" >"$TMP/install.log" 2>&1 ||
	{ cat "$TMP/install.log"; fail "make install"; }
for f in usr/sbin/metaroced usr/bin/metaroce-ctl usr/bin/metaroce-run usr/bin/metaroce-perf \
	usr/lib/libmetaroce.so.1.0.0 usr/lib/libmetaroce.so.1 usr/lib/libmetaroce.so \
	usr/lib/pkgconfig/libmetaroce.pc usr/include/metaroce/metaroce.h \
	usr/share/man/man8/metaroced.8 usr/share/man/man8/metaroce-ctl.8 \
	usr/share/man/man1/metaroce-run.1 usr/share/man/man1/metaroce-perf.1 \
	usr/share/man/man5/metaroced.conf.5 \
	etc/metaroce/metaroced.conf usr/lib/systemd/system/metaroced.service; do
	[ -e "$dest/$f" ] || fail "make install did not install /$f"
done
"$dest/usr/sbin/metaroced" --version | grep -q "^metaroced [0-9]" || fail "installed metaroced --version"
"$dest/usr/bin/metaroce-ctl" --version | grep -q "^metaroce-ctl [0-9]" ||
	fail "installed metaroce-ctl --version"
"$dest/usr/bin/metaroce-perf" --version | grep -q "^metaroce-perf [0-9]" ||
	fail "installed metaroce-perf --version"
grep -q "ExecStart=/usr/sbin/metaroced" "$dest/usr/lib/systemd/system/metaroced.service" ||
	fail "installed unit does not start /usr/sbin/metaroced"
# a program against the installed header and library, through pkg-config
pc="env PKG_CONFIG_PATH=$dest/usr/lib/pkgconfig PKG_CONFIG_SYSROOT_DIR=$dest pkg-config"
cat >"$TMP/ext.c" <<'EOF2'
#include <metaroce/metaroce.h>
int main(void) { return metaroce_query_paths(0, 0, 0) == 0 ? 0 : 0; }
EOF2
# shellcheck disable=SC2046
cc -Wall -Werror -o "$TMP/ext" "$TMP/ext.c" $($pc --cflags --libs libmetaroce) -libverbs ||
	fail "a program does not build against the installed libmetaroce"
objdump -p "$TMP/ext" | grep -q "NEEDED *libmetaroce.so.1" || fail "not linked to libmetaroce.so.1"
for page in "$dest"/usr/share/man/man*/*; do
	out=$(groff -z -ww -man "$page" 2>&1)
	[ -z "$out" ] || fail "groff warns about $(basename "$page"): $out"
done
echo ok
