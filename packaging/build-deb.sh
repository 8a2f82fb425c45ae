#!/bin/sh
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# packaging/build-deb.sh OUTDIR: builds the Debian packages (metaroce, libmetaroce1,
# libmetaroce-dev) from a copy of the tracked tree, as it is in the working tree, and leaves
# the .deb files in OUTDIR. Needs dpkg-dev and debhelper (make deps).
set -eu
out=${1:?usage: build-deb.sh OUTDIR}
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/metaroce-deb.XXXXXX")
trap 'rm -rf "$work"' EXIT INT TERM
src="$work/metaroce-0.1.0"
mkdir -p "$src" "$out"
(cd "$root" && git ls-files -z --cached --others --exclude-standard | tar --null -T - -cf -) |
	tar -xf - -C "$src"
mv "$src/packaging/debian" "$src/debian"
(cd "$src" && dpkg-buildpackage -us -uc -b >"$work/build.log" 2>&1) ||
	{ tail -n 30 "$work/build.log" >&2; echo "build-deb: dpkg-buildpackage failed" >&2; exit 1; }
rm -f "$work"/*-dbgsym_*.deb
mv "$work"/*.deb "$out"/
ls "$out"/*.deb
