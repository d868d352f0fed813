#!/usr/bin/env bash
# Builds the Kubernetes control plane that the e2e harness runs (etcd,
# kube-apiserver, kube-controller-manager, kube-scheduler, kwok) from Go
# modules, caches each binary under $THAW_CACHE/<name>-<version>/ and links
# it into $KUBE_BIN_DIR. A warm run (every binary cached) only re-links.
#
# Versions are pinned by the modules under tools/kube (go.mod + go.sum are
# committed); kwok has no replace directives and is installed by version.
#
# Env:
#   THAW_CACHE    cache directory (default ${XDG_CACHE_HOME:-~/.cache}/thaw-tools)
#   KUBE_BIN_DIR  where the links go (default <repo>/.tools/bin)
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
THAW_CACHE="${THAW_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/thaw-tools}"
KUBE_BIN_DIR="${KUBE_BIN_DIR:-$ROOT/.tools/bin}"
GO="${GO:-go}"

# KUBE_VERSION is the k8s.io/kubernetes release in tools/kube/go.mod.
# v1.37.2's module zip is not served by the module proxy; v1.37.1 is the
# nearest patch release (API-compatible with client-go v0.37.2).
KUBE_VERSION="v1.37.1"
ETCD_VERSION="v3.6.16"
KWOK_VERSION="v0.8.0"

# shellcheck source=lib/cache.sh
source "$ROOT/hack/lib/cache.sh"
CACHE_LINK_DIR="$KUBE_BIN_DIR"
CACHE_LABEL="kube tools"
cache_lock kube-tools

# Kubernetes reads its version from these variables; without them the
# binaries report v0.0.0 and version-skew checks get confused.
kube_ldflags() {
	local v="$KUBE_VERSION" major minor
	major="${v#v}"
	major="${major%%.*}"
	minor="$(echo "${v#v}" | cut -d. -f2)"
	local flags="-s -w"
	local pkg
	for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
		flags+=" -X $pkg.gitVersion=$v -X $pkg.gitMajor=$major -X $pkg.gitMinor=$minor"
		flags+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
	done
	echo "$flags"
}

build_etcd() {
	(cd "$ROOT/tools/kube/etcd" && "$GO" build -trimpath -ldflags="-s -w" -o "$1/$2" go.etcd.io/etcd/server/v3)
}

build_kube() {
	(cd "$ROOT/tools/kube" && "$GO" build -trimpath -ldflags="$KUBE_LDFLAGS" -o "$1/$2" "k8s.io/kubernetes/cmd/$2")
}

build_kwok() {
	# No module context needed: kwok's own go.mod and go.sum pin its deps.
	(cd "$1" && GOBIN="$1" GOFLAGS=-buildvcs=false "$GO" install -trimpath -ldflags="-s -w" "sigs.k8s.io/kwok/cmd/kwok@$KWOK_VERSION")
}

total_start=$SECONDS
KUBE_LDFLAGS="$(kube_ldflags)"

cache_build etcd "$ETCD_VERSION" build_etcd
for bin in kube-apiserver kube-controller-manager kube-scheduler; do
	cache_build "$bin" "$KUBE_VERSION" build_kube
done
cache_build kwok "$KWOK_VERSION" build_kwok

echo "kube tools: ready in $KUBE_BIN_DIR ($((SECONDS - total_start))s)"
