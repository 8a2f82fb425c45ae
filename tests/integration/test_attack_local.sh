# A local user against the daemon (issue 20; cases listed in tests/integration/attack/README.md):
# an unprivileged account on host B, speaking the control protocol directly
# (tests/integration/attack/hoard), takes every connection, CQ, QP, region and byte of the
# daemon's address space its user may hold, over many connections, and tries a 1 TiB sparse
# region. Each is refused exactly at its user_max_* limit (EUSERS, EDQUOT); a connection
# past the limit is told why (MRC_CTL_REFUSED) rather than cut off; while the user holds it
# all, root's transfer between A and B completes with every byte checked and B answers
# `metaroce-ctl status` within 1 s throughout; when the user lets go, everything comes back.
. "$(dirname "$0")/lib.sh"

command -v setpriv >/dev/null || skip "no setpriv here (util-linux) to act as another user"
LIMITS="--set user_max_connections=4 --set user_max_cqs=5 --set user_max_qps=6"
# four sparse gigabytes and a few pages: the regions run out by count after the bytes
LIMITS="$LIMITS --set user_max_mrs=9 --set user_max_registered=4295049216"
# shellcheck disable=SC2086
two_daemons $LIMITS
# the socket reachable by another user, in its group as a deployment puts its users
chmod o+x "$TMP"
chgrp nogroup "$TMP/b.sock"
as_nobody() { setpriv --reuid=nobody --regid=nogroup --clear-groups "$@"; }

mkfifo "$TMP/hold"
as_nobody "$BUILD/tests/integration/attack/hoard" "$TMP/b.sock" \
	<"$TMP/hold" >"$TMP/hoard.out" 2>&1 &
hoard=$!
PIDS="$PIDS $hoard"
# the hoarder holds until its standard input closes: when this writer, which writes nothing
# and waits on nothing, is killed (a process of its own, so that nothing started later
# inherits the pipe and keeps it open)
tail -f /dev/null >"$TMP/hold" &
holder=$!
PIDS="$PIDS $holder"
wait_for "$TMP/hoard.out" "^holding" 60
cat "$TMP/hoard.out"

# root's view: the user at its limits
ctl_json "$TMP/b.sock" status '[u for u in j["users"] if u["limited"]]' >"$TMP/users.txt"
python3 - "$TMP/users.txt" <<'PY' || fail "B does not show the hoarding user at its limits"
import ast, sys
users = [ast.literal_eval(l) for l in open(sys.argv[1]) if l.strip()]
assert len(users) == 1, users
u = users[0]
print("B shows uid %d holding %s" % (u["uid"], {k: v for k, v in u.items() if isinstance(v, list)}))
for r in ("connections", "cqs", "qps", "mrs"):
    assert u[r][0] == u[r][1], (r, u[r])
assert 4 << 30 < u["registered"][0] <= u["registered"][1], u["registered"]
PY
# one more connection of that user is refused, and says why
if as_nobody "$BUILD/bin/metaroce-ctl" -S "$TMP/b.sock" status >"$TMP/refused.out" 2>&1; then
	fail "a fifth connection of the hoarding user was served"
fi
grep -q "refused this connection: Too many users" "$TMP/refused.out" ||
	fail "the refused connection was not told why: $(cat "$TMP/refused.out")"
echo "a fifth connection: $(cat "$TMP/refused.out")"

# root's transfer while the user holds everything, B's control socket probed throughout
status_probe "$TMP/b.sock" "$hoard" "$TMP/probe.out"
probe=$PROBE
perf_pair beside_hoard -e -- -t write -s 65536 -q 2 -Q 8 -n 200 -V -e
json_check beside_hoard 'j["messages"] == 400 and j["peer"]["verified"] == 400 and j["errors"] == 0 and j["peer"]["errors"] == 0'

kill "$holder" # let go
wait "$hoard" || { cat "$TMP/hoard.out"; tail -n 20 "$TMP/b.log"; fail "the hoarder found a limit not held"; }
tail -n 2 "$TMP/hoard.out"
wait "$probe" || { cat "$TMP/probe.out"; fail "B's control socket while the user held its limits"; }
echo "B: $(cat "$TMP/probe.out")"
refusals=$("$BUILD/bin/metaroce-ctl" -S "$TMP/b.sock" metrics |
	awk '$1 == "metaroce_user_refusals_total" { print $2 }')
[ "${refusals:-0}" -ge 7 ] || fail "B counted ${refusals:-0} user refusals, 7 at least expected"
grep -q "uid [0-9]* refused: it holds" "$TMP/b.log" || fail "B's log does not name the limit"
kill -0 "$PID_b" || fail "daemon B died"
echo "B refused $refusals requests for the user's limits and logged why"
