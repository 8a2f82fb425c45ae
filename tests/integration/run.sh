#!/bin/sh
# Runs every tests/integration/test_*.sh. A test exits 0 (pass), 77 (skipped: the machine
# lacks a feature it needs; it prints why) or anything else (fail). Each test creates and
# deletes its own network namespaces and processes, even when it fails.
#
#   tests/integration/run.sh BUILD_DIR [TEST...]
set -u
build=${1:?usage: run.sh BUILD_DIR [TEST...]}
shift
dir=$(dirname "$0")
[ $# -gt 0 ] || set -- "$dir"/test_*.sh
pass=0 fail=0 skip=0
for t in "$@"; do
	name=$(basename "$t" .sh)
	log=$build/integration/$name.log
	mkdir -p "$build/integration"
	BUILD="$build" sh "$t" >"$log" 2>&1
	rc=$?
	case $rc in
	0) pass=$((pass + 1)); printf '  %-8s %s\n' PASS "$name" ;;
	77) skip=$((skip + 1)); printf '  %-8s %s: %s\n' SKIP "$name" "$(tail -n 1 "$log")" ;;
	*) fail=$((fail + 1)); printf '  %-8s %s (exit %d), last lines of %s:\n' FAIL "$name" $rc "$log"
	   tail -n 25 "$log" | sed 's/^/           /' ;;
	esac
done
echo "integration: $pass passed, $fail failed, $skip skipped"
[ $fail -eq 0 ]
