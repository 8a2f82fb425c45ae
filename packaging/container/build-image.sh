#!/bin/sh
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# packaging/container/build-image.sh DEBDIR OUTDIR TAG: the metaroced image, without a
# registry: a Debian minbase root file system made by mmdebstrap from this machine's own apt
# mirror with our packages (DEBDIR: metaroce_*.deb, libmetaroce1_*.deb) and ibverbs-utils in
# it, as OUTDIR/rootfs.tar, then `podman build` of Containerfile (FROM scratch, ADD that tar),
# tagged TAG. OUTDIR/image.json records the tag, the image id and its size. Needs mmdebstrap,
# podman and runc (make deps); root. podman reads its configuration as usual (make image
# points CONTAINERS_CONF at containers.conf here, for hosts like CI's).
set -eu
debs=${1:?usage: build-image.sh DEBDIR OUTDIR TAG}
out=${2:?usage: build-image.sh DEBDIR OUTDIR TAG}
tag=${3:?usage: build-image.sh DEBDIR OUTDIR TAG}
here=$(cd "$(dirname "$0")" && pwd)
debs=$(cd "$debs" && pwd)
mkdir -p "$out"

# The mirrors are this machine's, read at run time, never written into the project: its
# Debian sources files whole (the release, its updates and its security archive, so the image
# has the fixes), else the first Debian mirror it names.
mirrors=$(grep -ls 'debian-archive-keyring' /etc/apt/sources.list.d/*.sources || true)
if [ -z "$mirrors" ]; then
	mirrors=$(awk '/^URIs:/ {print $2; exit}' /etc/apt/sources.list.d/*.sources 2>/dev/null || true)
	[ -n "$mirrors" ] ||
		mirrors=$(awk '$1 == "deb" {print $2; exit}' /etc/apt/sources.list 2>/dev/null || true)
fi
[ -n "$mirrors" ] || { echo "build-image: no Debian mirror in this machine's apt sources" >&2; exit 1; }
suite=$(. /etc/os-release && echo "$VERSION_CODENAME")

# Documentation, manuals and translations stay out (the image is for running, not reading);
# apt's lists and caches are cleaned by mmdebstrap itself.
install="env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends"
# (apt installs our packages from inside the root: a path given to --include is read by a
# dpkg that runs chrooted, where the host's temporary files are not)
ours=$(cd "$debs" && echo libmetaroce1_*.deb metaroce_*.deb)
mmdebstrap --variant=minbase --format=tar \
	--customize-hook="copy-in $(printf "$debs/%s " $ours)/tmp" \
	--customize-hook="chroot \"\$1\" $install $(printf '/tmp/%s ' $ours)ibverbs-utils" \
	--customize-hook='rm -f "$1"/tmp/*.deb' \
	--dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/doc/*' \
	--dpkgopt='path-include=/usr/share/doc/*/copyright' \
	--dpkgopt='path-exclude=/usr/share/locale/*' --dpkgopt='path-exclude=/usr/share/info/*' \
	"$suite" "$out/rootfs.tar" $mirrors >"$out/mmdebstrap.log" 2>&1 ||
	{ tail -n 20 "$out/mmdebstrap.log" >&2; echo "build-image: mmdebstrap failed" >&2; exit 1; }

# no network: nothing in the recipe runs a command
cp "$here/Containerfile" "$out/Containerfile"
old=$(podman image inspect --format '{{.Id}}' "$tag" 2>/dev/null || true)
podman build --network none --pull=never --layers=false -f "$out/Containerfile" -t "$tag" "$out" \
	>"$out/build.log" 2>&1 ||
	{ tail -n 20 "$out/build.log" >&2; echo "build-image: podman build failed" >&2; exit 1; }
# the image this one replaces under the tag would stay behind untagged, one per build
new=$(podman image inspect --format '{{.Id}}' "$tag")
[ -z "$old" ] || [ "$old" = "$new" ] || podman rmi "$old" >/dev/null 2>&1 || true
podman image inspect --format '{"tag": "{{index .RepoTags 0}}", "id": "{{.Id}}", "size": {{.Size}}}' \
	"$tag" >"$out/image.json"
cat "$out/image.json"
