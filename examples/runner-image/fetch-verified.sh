#!/bin/bash
# Used only while building the runner images: fetch-verified URL SHA256 NAME
# downloads URL and installs it as /out/NAME only if its sha256 is SHA256, so
# that the Forgejo and Gitea runners are checked the same way. The checksum
# always comes from the build, never from a file published next to the
# download: whoever can replace the binary could replace that file too.
set -euo pipefail
url=$1 sum=$2 name=$3
[[ $sum =~ ^[0-9a-fA-F]{64}$ ]] || {
	echo "error: '$sum' is not a sha256 (64 hex digits) for ${url##*/}" >&2
	exit 1
}
curl -fsSL --retry 5 --proto '=https' -o /tmp/download "$url"
echo "$sum  /tmp/download" | sha256sum -c --strict -
install -D -m 0755 /tmp/download "/out/$name"
rm -f /tmp/download
