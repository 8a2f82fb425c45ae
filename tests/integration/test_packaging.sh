# The shipped files: the systemd unit passes systemd-analyze verify, and the default
# configuration parses (with one plane added, as an operator would).
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
echo ok
