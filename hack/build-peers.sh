#!/usr/bin/env bash
# Builds the peers that `make bench` compares thaw with, from the Go module
# proxy, caches each binary under $THAW_CACHE/<name>-<version>/ and links it
# into $PEERS_BIN_DIR. A warm run (both cached) only re-links.
#
#   keda-interceptor  the KEDA HTTP add-on's interceptor
#                     (github.com/kedacore/http-add-on/interceptor)
#   queue-proxy       Knative Serving's queue-proxy (knative.dev/serving/cmd/queue)
#
# Versions are pinned by the modules under bench/peers (go.mod + go.sum are
# committed; neither upstream module has replace directives, so the build
# list is the one `go install module@version` would use). Each module
# requires its peer with `tool`; the build needs no version listing from
# the proxy.
#
# Env:
#   THAW_CACHE     cache directory (default ${XDG_CACHE_HOME:-~/.cache}/thaw-tools)
#   PEERS_BIN_DIR  where the links go (default <repo>/.tools/bin)
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
THAW_CACHE="${THAW_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/thaw-tools}"
PEERS_BIN_DIR="${PEERS_BIN_DIR:-$ROOT/.tools/bin}"
GO="${GO:-go}"

# KEDA_HTTP_VERSION is github.com/kedacore/http-add-on in bench/peers/keda/go.mod.
KEDA_HTTP_VERSION="v0.15.0"
# KNATIVE_SERVING_VERSION is knative.dev/serving in bench/peers/queue/go.mod:
# v0.50.0 is the module release of knative-v1.23.
KNATIVE_SERVING_VERSION="v0.50.0"

# shellcheck source=lib/cache.sh
source "$ROOT/hack/lib/cache.sh"
CACHE_LINK_DIR="$PEERS_BIN_DIR"
CACHE_LABEL="peers"
cache_lock peers

# check_pin DIR MODULE VERSION: the script's version and the module's agree.
check_pin() {
	if ! grep -q "^[[:space:]]*$2 $3\b" "$ROOT/bench/peers/$1/go.mod"; then
		echo "peers: bench/peers/$1/go.mod does not require $2 $3" >&2
		exit 1
	fi
}

build_keda() {
	(cd "$ROOT/bench/peers/keda" && GOFLAGS=-buildvcs=false "$GO" build -trimpath -ldflags="-s -w" -o "$1/$2" github.com/kedacore/http-add-on/interceptor)
}

build_queue() {
	(cd "$ROOT/bench/peers/queue" && GOFLAGS=-buildvcs=false "$GO" build -trimpath -ldflags="-s -w" -o "$1/$2" knative.dev/serving/cmd/queue)
}

total_start=$SECONDS
check_pin keda github.com/kedacore/http-add-on "$KEDA_HTTP_VERSION"
check_pin queue knative.dev/serving "$KNATIVE_SERVING_VERSION"
cache_build keda-interceptor "$KEDA_HTTP_VERSION" build_keda
cache_build queue-proxy "$KNATIVE_SERVING_VERSION" build_queue
echo "peers: ready in $PEERS_BIN_DIR ($((SECONDS - total_start))s)"
