# metaroce-ctl's output for every object and command, text and JSON: the text, with what
# changes from run to run normalized (normalize.py), must equal tests/integration/golden/;
# every -j output must parse as JSON (and -j -p too). With a live QP, so qp and peer show
# something. METAROCE_GOLDEN_UPDATE=1 rewrites the golden files instead of comparing.
. "$(dirname "$0")/lib.sh"

# The golden files are the xdp backend's (the richest output: status names each plane's XDP
# mode, xdp show has its counters), so it is asked for by name; a kernel that cannot attach it
# gets the udp backend, whose status, xdp and metrics are then not compared, and says so.
two_hosts
start_two_daemons --set backend=xdp
started() { grep -q "$DAEMON_UP\|cannot start" "$TMP/$1.log"; }
wait_until 5 "metaroced a neither started nor gave up" started a
wait_until 5 "metaroced b neither started nor gave up" started b
if grep -q "cannot start" "$TMP/a.log" "$TMP/b.log"; then
	echo "  xdp cannot attach here ($(sed -n 's/.*cannot start: //p' "$TMP/a.log" "$TMP/b.log" |
		head -n 1)): the udp backend's output is checked"
	for p in $PIDS; do kill -KILL "$p" 2>/dev/null; done
	PIDS=""
	start_two_daemons --set backend=udp
	wait_for "$TMP/a.log" "$DAEMON_UP"
	wait_for "$TMP/b.log" "$DAEMON_UP"
fi
CTL="$BUILD/bin/metaroce-ctl"
golden="$(dirname "$0")/golden"
bg_b "$TMP/g.server.log" "$BUILD/tests/verbs/verbs_check" -n 0 -s 4096
bg_a "$TMP/g.client.log" "$BUILD/tests/verbs/verbs_check" -n 0 -s 4096 198.18.0.2
# the QP up (verbs_check's client retries until its server listens) and the peer known
ctl_wait 10 "$TMP/a.sock" qp "[q['state'] for q in j['qps']] == ['rts']"
ctl_wait 10 "$TMP/a.sock" peer "[p['state'] for p in j['peers']] == ['known']"
# What the kernel let the daemon choose is read, not assumed: the golden files hold the xdp
# backend's output with each plane's XDP mode (native or generic) normalized to MODE, and
# status and xdp show must say what -j xdp reports.
backend_name=$(ctl_json "$TMP/a.sock" status "j['backend']") || fail "metaroce-ctl -j status"
"$CTL" -S "$TMP/a.sock" status | grep -qF "  $(backend_of "$TMP/a.sock")  port " ||
	fail "status does not say '$(backend_of "$TMP/a.sock")': $("$CTL" -S "$TMP/a.sock" status)"
xdp_of "$TMP/a.sock" 0
xdp_of "$TMP/a.sock" 1

check() { # NAME COMMAND...
	name=$1
	shift
	case $backend_name.$name in
	xdp.*) ;;
	*.status | *.xdp | *.metrics)
		echo "  golden/$name.txt not compared: it is the xdp backend's, and this daemon runs $(backend_of "$TMP/a.sock")"
		return ;;
	esac
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
