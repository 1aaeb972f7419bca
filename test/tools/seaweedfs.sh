#!/usr/bin/env bash
# Ensures the SeaweedFS `weed` binary (Apache-2.0; the sandbox's real S3 server)
# exists, building it from the Go module proxy when missing, and prints its path
# on stdout (progress and the build's wall time go to stderr). Cached OUTSIDE the
# repo keyed by version, like assets.sh, so later runs take ~0.1 s.
#
#   WEED="$(test/tools/seaweedfs.sh)"
#
# Env: SEAWEEDFS_VERSION (the one pseudo-version the module proxy serves)
#      ASSETS_CACHE (${XDG_CACHE_HOME:-$HOME/.cache}/etcdfleet-assets)
set -euo pipefail

SEAWEEDFS_VERSION="${SEAWEEDFS_VERSION:-v0.0.0-20261109003541-7506e5f91cd6}"
CACHE="${ASSETS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/etcdfleet-assets}"
DIR="$CACHE/seaweedfs-$SEAWEEDFS_VERSION"
MOD=github.com/seaweedfs/seaweedfs

export CGO_ENABLED=0 GOFLAGS="${GOFLAGS:--buildvcs=false}" GOTOOLCHAIN="${GOTOOLCHAIN:-local}"
mkdir -p "$CACHE"
exec 9>"$CACHE/.seaweedfs.lock"
flock 9   # concurrent runs share one build

build_weed() {
  local tmp start=$SECONDS
  tmp="$(mktemp -d "$CACHE/.seaweedfs.XXXXXX")"
  trap 'rm -rf "$tmp"' RETURN
  echo ">> building weed $SEAWEEDFS_VERSION from the module proxy (cold: many minutes on 2 cores)" >&2
  ( cd "$tmp"
    go mod init seaweedfs-build.local >/dev/null 2>&1
    gomod="$(go mod download -json "$MOD@$SEAWEEDFS_VERSION" | sed -n 's/^\s*"GoMod": "\(.*\)",\?$/\1/p')"
    go mod edit -go="$(sed -n 's/^go \([0-9.]*\)$/\1/p' "$gomod")"
    # A dependency's replace directives are ignored, so carry weed's own over.
    sed -n 's/^replace \(\S*\) => \(\S*\) \(\S*\)$/\1=\2@\3/p' "$gomod" | while read -r r; do
      go mod edit -replace="$r"
    done
    go get "$MOD/weed@$SEAWEEDFS_VERSION"   # @version: a bare go get jumps to @latest
    go build -trimpath -ldflags "-s -w" -o "$tmp/out/weed" "$MOD/weed" ) >&2
  mkdir -p "$DIR"; mv -f "$tmp/out/weed" "$DIR/"
  echo ">> weed built in $((SECONDS - start))s" >&2
}

[ -x "$DIR/weed" ] || build_weed
echo "$DIR/weed"
