#!/usr/bin/env bash
# make run: thaw local on the example revisions, with the Envoy `make tools`
# installed. Ctrl-C drains held requests, stops the processes and Envoy.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
exec ./bin/thaw local --dev -f examples/local.yaml --envoy "${ENVOY_BIN:-$root/.tools/bin/envoy}" "$@"
