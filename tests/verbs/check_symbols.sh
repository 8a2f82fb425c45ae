#!/bin/bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# A program linked against libibverbs.so.1 records, for each verb it calls, the symbol's
# default version there; the dynamic linker binds it to libmetaroce.so.1 only if that exact
# version is offered. The same holds for librdmacm.so.1's RDMACM_1.x symbols. This checks LIB
# against the installed libibverbs and librdmacm:
#   - every symbol whose default version in libibverbs is IBVERBS_1.x is exported by LIB with
#     that same default version, and so is ibv_query_gid_type@@IBVERBS_PRIVATE_34;
#   - every symbol whose default version in librdmacm is RDMACM_1.x likewise;
#   - LIB exports nothing outside the IBVERBS* and RDMACM* versions and its own METAROCE_1.0
#     extension API (<metaroce/metaroce.h>): no metaroce internals leak.
#
#   tests/verbs/check_symbols.sh LIB
#
# Exits 0 when all holds, 1 with a list of what is missing or wrong, 2 on a usage error.
set -euo pipefail

if [ $# -ne 1 ]; then
	echo "usage: $0 LIB" >&2
	exit 2
fi
lib=$1
# gcc's triplet names Debian's multiarch directory; clang's (x86_64-pc-linux-gnu) does not
ref=/usr/lib/$(gcc -dumpmachine)/libibverbs.so.1
cm_ref=/usr/lib/$(gcc -dumpmachine)/librdmacm.so.1

command -v objdump >/dev/null || { echo "check_symbols: objdump not found (binutils)" >&2; exit 2; }
if [ ! -r "$lib" ] || [ ! -s "$lib" ]; then
	echo "check_symbols: cannot read $lib, or it is empty" >&2
	exit 2
fi
if [ ! -r "$ref" ]; then
	echo "check_symbols: cannot read $ref (is libibverbs1 installed?)" >&2
	exit 2
fi
if [ ! -r "$cm_ref" ]; then
	echo "check_symbols: cannot read $cm_ref (is librdmacm1 installed?)" >&2
	exit 2
fi

# Defined dynamic symbols as "VERSION NAME", VERSION in parentheses when it is not the default
# (objdump -T prints a hidden version that way). objdump -T lines read
#   ADDRESS FLAGS SECTION<tab>SIZE [VERSION] NAME
# and FLAGS may hold spaces, so the split is at the tab. The *ABS* symbols named after their
# own version are the version definitions, not exports.
defined() {
	objdump -T "$1" | awk -F '\t' '
		NF == 2 && $1 !~ /\*UND\*/ {
			n = split($2, f, " ")
			if (n == 3) {
				ver = f[2]; name = f[3]
			} else if (n == 2) {
				ver = ""; name = f[2]
			} else {
				next
			}
			if ($1 ~ /\*ABS\*/ && ver == name) next
			print ver, name
		}' | LC_ALL=C sort -u
}

ref_syms=$(defined "$ref") || { echo "check_symbols: objdump -T $ref failed" >&2; exit 2; }
cm_syms=$(defined "$cm_ref") || { echo "check_symbols: objdump -T $cm_ref failed" >&2; exit 2; }
lib_syms=$(defined "$lib") || { echo "check_symbols: objdump -T $lib failed" >&2; exit 2; }

# What LIB must export: libibverbs' default IBVERBS_1.x symbols and the one private symbol.
want=$( { awk '$1 ~ /^IBVERBS_1\./' <<<"$ref_syms"
	  awk '$1 ~ /^RDMACM_1\./' <<<"$cm_syms"
	  echo "IBVERBS_PRIVATE_34 ibv_query_gid_type"; } | LC_ALL=C sort -u)
if ! grep -qxF "IBVERBS_PRIVATE_34 ibv_query_gid_type" <<<"$ref_syms"; then
	echo "check_symbols: note: $ref has no ibv_query_gid_type@@IBVERBS_PRIVATE_34;" \
		"its private ABI number differs from rdma-core v44's" >&2
fi

bad=0
count=0
reported=
while read -r ver name; do
	count=$((count + 1))
	if grep -qxF "$ver $name" <<<"$lib_syms"; then
		continue
	fi
	bad=$((bad + 1))
	reported+="$name"$'\n'
	have=$(awk -v n="$name" '$2 == n { printf "%s%s", sep, $1; sep = ", " }' <<<"$lib_syms")
	if [ -n "$have" ]; then
		echo "wrong version: $name is $ver in rdma-core, LIB exports it as $have"
	else
		echo "missing:       $name@@$ver"
	fi
done <<<"$want"

# A hidden "(IBVERBS_...)" compat version is allowed, an unversioned or foreign one is not.
# Names reported above are not reported twice.
while read -r ver name; do
	[ -n "$name" ] || continue
	grep -qxF "$name" <<<"$reported" && continue
	case $ver in
	IBVERBS_*|"(IBVERBS_"*|RDMACM_*|METAROCE_1.0) ;;
	*)	bad=$((bad + 1))
		echo "leaked:        $name (version '${ver:-none}'), not IBVERBS*, RDMACM* or" \
			"METAROCE_1.0" ;;
	esac
done <<<"$lib_syms"

if [ $bad -ne 0 ]; then
	echo "check_symbols: $bad problem(s) in $lib against $ref" >&2
	exit 1
fi
echo "check_symbols: $count symbols, versions match libibverbs and librdmacm"
