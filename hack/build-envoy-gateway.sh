#!/usr/bin/env bash
# Builds the pinned Envoy Gateway controller (envoy-gateway) from the Go module
# proxy, caches it under $THAW_CACHE/envoy-gateway-<version>/ and links it to
# .tools/bin/envoy-gateway. A warm run (binary cached) only re-links. The e2e
# tests run it in standalone mode (file provider, host infrastructure).
#
# Env:
#   THAW_CACHE    cache directory (default ${XDG_CACHE_HOME:-~/.cache}/thaw-tools)
#   KUBE_BIN_DIR  where the link goes (default <repo>/.tools/bin)
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
THAW_CACHE="${THAW_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/thaw-tools}"
KUBE_BIN_DIR="${KUBE_BIN_DIR:-$ROOT/.tools/bin}"
GO="${GO:-go}"

# EG_VERSION is the newest v1.9.x on the module proxy; it must match the
# github.com/envoyproxy/gateway requirement in go.mod (the hook's proto).
EG_VERSION="v1.9.1"

mkdir -p "$THAW_CACHE" "$KUBE_BIN_DIR"
if command -v flock >/dev/null 2>&1; then
	exec 9>"$THAW_CACHE/.envoy-gateway.lock"
	flock 9
fi

dest="$THAW_CACHE/envoy-gateway-$EG_VERSION"
if [[ -x "$dest/envoy-gateway" ]]; then
	echo "envoy-gateway $EG_VERSION cached in $dest"
else
	start=$SECONDS
	out="$(mktemp -d "$THAW_CACHE/.build-envoy-gateway.XXXXXX")"
	echo "envoy-gateway: building $EG_VERSION (a cold build takes minutes)"
	# No module context: EG's own go.mod and go.sum pin its dependencies.
	(cd "$out" && GOBIN="$out" GOFLAGS=-buildvcs=false "$GO" install -trimpath -ldflags="-s -w" \
		"github.com/envoyproxy/gateway/cmd/envoy-gateway@$EG_VERSION")
	if [[ ! -x "$out/envoy-gateway" ]]; then
		echo "envoy-gateway: build produced no binary" >&2
		exit 1
	fi
	rm -rf "$dest"
	mkdir -p "$dest"
	mv "$out/envoy-gateway" "$dest/envoy-gateway"
	rm -rf "$out"
	echo "envoy-gateway: built $EG_VERSION in $((SECONDS - start))s"
fi
ln -sfn "$dest/envoy-gateway" "$KUBE_BIN_DIR/envoy-gateway"
