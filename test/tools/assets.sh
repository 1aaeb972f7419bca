#!/usr/bin/env bash
# Ensures the real control-plane binaries the sandbox runs exist, building them
# from the Go module proxy when missing, and prints their directory on stdout
# (progress goes to stderr). Binaries are cached OUTSIDE the repo, keyed by
# version, so a fresh clone on the same machine (CI) reuses them in ~0.1 s.
#
#   export KUBEBUILDER_ASSETS="$(test/tools/assets.sh)"
#
# Env: K8S_VERSION (v1.36.3) ETCD_VERSION (v3.7.3) ETCD_PREVIOUS_VERSION (v3.6.16)
#      ASSETS_CACHE (${XDG_CACHE_HOME:-$HOME/.cache}/etcdfleet-assets)
#
# Builds:
#   kube-apiserver, kube-controller-manager, kubectl  k8s.io/kubernetes via a wrapper
#       module whose staging modules are replaced by their published v0.X.Y.
#   etcd   etcdmain.Main wrapped with test/sandbox/sandboxdns, so that members
#       resolve Kubernetes DNS names from the sandbox hosts file in process.
#   etcdctl  stock.
#   etcd-<major.minor>  the same wrapper at ETCD_PREVIOUS_VERSION (and a link
#       for ETCD_VERSION's minor): the sandbox kubelet runs the binary whose
#       minor matches a Pod's image tag, so version upgrades and downgrades
#       in the e2e suites are real (test/sandbox/kubelet EtcdBinaries).
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
K8S_VERSION="${K8S_VERSION:-v1.36.3}"
ETCD_VERSION="${ETCD_VERSION:-v3.7.3}"
ETCD_PREVIOUS_VERSION="${ETCD_PREVIOUS_VERSION:-v3.6.16}"
CACHE="${ASSETS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/etcdfleet-assets}"
# The etcd wrapper embeds our resolver, so its key includes the resolver's source hash.
DNS_HASH="$(cat "$ROOT"/test/sandbox/sandboxdns/*.go "$ROOT"/test/tools/_etcdwrapper/main.go | sha256sum | cut -c1-12)"
KUBE_DIR="$CACHE/kube-${K8S_VERSION#v}"
ETCD_DIR="$CACHE/etcd-${ETCD_VERSION#v}-dns-$DNS_HASH"
PREV_DIR="$CACHE/etcd-${ETCD_PREVIOUS_VERSION#v}-dns-$DNS_HASH"
DEST="$CACHE/assets-k8s-${K8S_VERSION#v}_etcd-${ETCD_VERSION#v}-${ETCD_PREVIOUS_VERSION#v}-$DNS_HASH"

export CGO_ENABLED=0 GOFLAGS="${GOFLAGS:--buildvcs=false}" GOTOOLCHAIN="${GOTOOLCHAIN:-local}"
mkdir -p "$CACHE"
exec 9>"$CACHE/.lock"
flock 9   # concurrent `make` runs share one build

build_kube() {
  local cmds=(kube-apiserver kube-controller-manager kubectl) tmp start=$SECONDS
  tmp="$(mktemp -d "$CACHE/.kube.XXXXXX")"
  trap 'rm -rf "$tmp"' RETURN
  echo ">> building ${cmds[*]} $K8S_VERSION from the module proxy (cold: ~6 min on 2 cores)" >&2
  ( cd "$tmp"
    staging="v0.${K8S_VERSION#v1.}"
    go mod init kube-build.local >/dev/null 2>&1
    kmod="$(go mod download -json "k8s.io/kubernetes@$K8S_VERSION" | sed -n 's/^\s*"GoMod": "\(.*\)",\?$/\1/p')"
    go mod edit -go="$(sed -n 's/^go \([0-9.]*\)$/\1/p' "$kmod")" -require="k8s.io/kubernetes@$K8S_VERSION"
    # Only staging modules required at v0.0.0; sample-* have no published tags.
    for m in $(sed -n 's#^\s*\(k8s\.io/[a-z0-9-]*\) => \./staging/.*#\1#p' "$kmod"); do
      if grep -qE "^\s+$m v0\.0\.0\$" "$kmod"; then go mod edit -replace="$m=$m@$staging"; fi
    done
    pk=(); for c in "${cmds[@]}"; do pk+=("k8s.io/kubernetes/cmd/$c@$K8S_VERSION"); done
    go get "${pk[@]}"   # @version matters: a bare `go get` jumps to @latest
    grep -q "k8s.io/kubernetes $K8S_VERSION\$" go.mod
    minor="${K8S_VERSION#v1.}"; minor="${minor%%.*}"; ld="-s -w"
    for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
      ld="$ld -X $p.gitVersion=$K8S_VERSION -X $p.gitMajor=1 -X $p.gitMinor=$minor -X $p.gitTreeState=clean"
    done
    for c in "${cmds[@]}"; do
      go build -trimpath -ldflags "$ld" -o "$tmp/out/$c" "k8s.io/kubernetes/cmd/$c"
    done ) >&2
  mkdir -p "$KUBE_DIR"; mv -f "$tmp"/out/* "$KUBE_DIR/"; rm -rf "$tmp"
  echo ">> kube binaries built in $((SECONDS - start))s" >&2
}

# build_etcd VERSION DIR
build_etcd() {
  local version="$1" dir="$2" tmp start=$SECONDS
  tmp="$(mktemp -d "$CACHE/.etcd.XXXXXX")"
  trap 'rm -rf "$tmp"' RETURN
  echo ">> building etcd $version with the sandbox resolver (cold: ~1.5 min)" >&2
  ( cd "$tmp"
    go mod init etcd-build.local >/dev/null 2>&1
    mkdir sandboxdns
    cp "$ROOT"/test/sandbox/sandboxdns/*.go sandboxdns/; rm -f sandboxdns/*_test.go
    cp "$ROOT/test/tools/_etcdwrapper/main.go" main.go
    go get "go.etcd.io/etcd/server/v3@$version"
    go mod tidy   # adds x/net (the resolver's dnsmessage) at etcd's own version
    go build -trimpath -ldflags "-s -w" -o "$tmp/out/etcd" .
    # etcdctl after tidy: tidy drops requirements no package here imports.
    go get "go.etcd.io/etcd/etcdctl/v3@$version"
    go build -trimpath -ldflags "-s -w" -o "$tmp/out/etcdctl" go.etcd.io/etcd/etcdctl/v3 ) >&2
  mkdir -p "$dir"; mv -f "$tmp"/out/* "$dir/"; rm -rf "$tmp"
  echo ">> etcd built in $((SECONDS - start))s" >&2
}

[ -x "$KUBE_DIR/kubectl" ] && [ -x "$KUBE_DIR/kube-apiserver" ] && [ -x "$KUBE_DIR/kube-controller-manager" ] || build_kube
[ -x "$ETCD_DIR/etcd" ] && [ -x "$ETCD_DIR/etcdctl" ] || build_etcd "$ETCD_VERSION" "$ETCD_DIR"
[ -x "$PREV_DIR/etcd" ] && [ -x "$PREV_DIR/etcdctl" ] || build_etcd "$ETCD_PREVIOUS_VERSION" "$PREV_DIR"

# One directory for KUBEBUILDER_ASSETS: links to the version-keyed builds.
mkdir -p "$DEST"
for f in kube-apiserver kube-controller-manager kubectl; do ln -sfn "$KUBE_DIR/$f" "$DEST/$f"; done
for f in etcd etcdctl; do ln -sfn "$ETCD_DIR/$f" "$DEST/$f"; done
minor() { local v="${1#v}"; echo "${v%.*}"; }
ln -sfn "$ETCD_DIR/etcd" "$DEST/etcd-$(minor "$ETCD_VERSION")"
ln -sfn "$PREV_DIR/etcd" "$DEST/etcd-$(minor "$ETCD_PREVIOUS_VERSION")"
"$DEST/kube-apiserver" --version >&2
echo "$DEST"
