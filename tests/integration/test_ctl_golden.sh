# metaroce-ctl's output for every object and command, text and JSON: the text, with what
# changes from run to run normalized (normalize.py), must equal tests/integration/golden/;
# every -j output must parse as JSON (and -j -p too). With a live QP, so qp and peer show
# something. METAROCE_GOLDEN_UPDATE=1 rewrites the golden files instead of comparing.
. "$(dirname "$0")/lib.sh"

two_daemons
CTL="$BUILD/bin/metaroce-ctl"
golden="$(dirname "$0")/golden"
bg_b "$TMP/g.server.log" "$BUILD/tests/verbs/verbs_check" -n 0 -s 4096
sleep 0.3
bg_a "$TMP/g.client.log" "$BUILD/tests/verbs/verbs_check" -n 0 -s 4096 198.18.0.2
sleep 1

check() { # NAME COMMAND...
	name=$1
	shift
	"$CTL" -S "$TMP/a.sock" "$@" >"$TMP/out.txt" || fail "metaroce-ctl $* failed"
	python3 "$(dirname "$0")/normalize.py" "$TAG" "$TMP" <"$TMP/out.txt" >"$TMP/norm.txt"
	if [ -n "${METAROCE_GOLDEN_UPDATE:-}" ]; then
		cp "$TMP/norm.txt" "$golden/$name.txt"
	elif ! diff -u "$golden/$name.txt" "$TMP/norm.txt"; then
		fail "metaroce-ctl $* differs from golden/$name.txt"
	fi
}
check status status
check dev dev show
check peer peer show
check qp qp show
check stat stat show
check config config show
check xdp xdp show
check help help
check path_help path help
check metrics metrics
# the operator actions' answers, and a usage error's message (on stderr, exit 2)
check action_drain path set plane 1 down
check action_restore path set plane 1 up
check action_reset stat reset
check action_reload config reload
"$CTL" -S "$TMP/a.sock" path set plane 7 dwn >/dev/null 2>"$TMP/usage.txt"
[ $? -eq 2 ] || fail "a usage error did not exit 2"
if [ -n "${METAROCE_GOLDEN_UPDATE:-}" ]; then
	cp "$TMP/usage.txt" "$golden/usage_error.txt"
elif ! diff -u "$golden/usage_error.txt" "$TMP/usage.txt"; then
	fail "the usage error's message differs from golden/usage_error.txt"
fi
for action in "path set plane 1 down" "path set plane 1 up" "stat reset" "config reload"; do
	# shellcheck disable=SC2086
	"$CTL" -S "$TMP/a.sock" -j $action | python3 -c 'import json, sys; json.load(sys.stdin)' ||
		fail "metaroce-ctl -j $action is not JSON"
done
for obj in status dev peer qp path stat config xdp; do
	"$CTL" -S "$TMP/a.sock" -j "$obj" | python3 -c 'import json, sys; json.load(sys.stdin)' ||
		fail "metaroce-ctl -j $obj is not JSON"
	"$CTL" -S "$TMP/a.sock" -j -p "$obj" | python3 -c 'import json, sys; json.load(sys.stdin)' ||
		fail "metaroce-ctl -j -p $obj is not JSON"
done
echo PASS
