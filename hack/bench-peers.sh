#!/usr/bin/env bash
# make bench-peers: only the peers scenario (bench/scenarios -only peers:
# thaw beside the KEDA HTTP add-on interceptor and Knative's queue-proxy),
# then bench/report rewrites the peers section of docs/BENCHMARKS.md and
# leaves the rest of the document as it is. `make bench` runs the same
# scenario among the others.
#
# make test-peers (CI) runs it with --smoke: every peer built and started,
# one request through each side, nothing measured, no document written.
#
# Needs `make tools-envoy tools-kube tools-peers build` (the make targets
# do it) and unprivileged user namespaces (unshare --user --net --mount).
# Environment:
#   BENCH_QUICK=1   short runs for development (figures not comparable)
#   BENCH_OUT=dir   where peers.json goes (default bench/out)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
export ENVOY_BIN=${ENVOY_BIN:-$root/.tools/bin/envoy}
out=${BENCH_OUT:-bench/out}
# bench/ is a Go module of its own: build its commands into bin/ and run
# them from the repository root, where their defaults point.
go -C bench build -o "$root/bin/bench-scenarios" ./scenarios
go -C bench build -o "$root/bin/bench-report" ./report
smoke=0
if [ "${1:-}" = --smoke ]; then smoke=1; fi

args=(bin/bench-scenarios -only peers -out "$out/peers.json")
if [ "${BENCH_QUICK:-0}" = 1 ]; then args+=(-quick); fi
if [ "$smoke" = 1 ]; then
	out=$(mktemp -d)
	trap 'rm -rf "$out"' EXIT
	args=(bin/bench-scenarios -only peers -smoke -out "$out/peers.json")
fi
mkdir -p "$out"
echo "== peers: ${args[*]}" >&2
rc=0
"${args[@]}" || rc=$?
if [ "$smoke" = 1 ]; then
	if [ "$rc" -ne 0 ]; then echo "peers smoke: FAILED (see above)" >&2; fi
	exit "$rc"
fi
if [ -f "$out/peers.json" ]; then
	bin/bench-report -dir "$out" -o docs/BENCHMARKS.md -peers-only
fi
if [ "$rc" -ne 0 ]; then
	echo "bench-peers: failed (docs/BENCHMARKS.md names what failed; logs above)" >&2
fi
exit "$rc"
