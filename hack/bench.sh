#!/usr/bin/env bash
# make bench: the Go micro-benchmarks, the xDS benchmark at 10k revisions
# with a real Envoy, and the scenario benchmarks (bench/scenarios: `thaw
# local` with its real Envoy, a plain Envoy as baseline, vegeta as load),
# the peers scenario (thaw beside the KEDA HTTP add-on and Knative's
# queue-proxy);
# then bench/report writes docs/BENCHMARKS.md. The scenarios draw
# docs/burst.png. Raw outputs go to bench/out/.
#
# Needs `make tools build` (make bench does it). Environment:
#   BENCH_QUICK=1      short runs for development (figures not comparable)
#   BENCH_SCALE100K=0  leave out scenario scale100k (100,000 revisions with
#                      real Envoy: ~4 minutes and ~8 GB of memory on
#                      2 cores)
#   BENCH_MAX_LOAD=N   first wait (up to 10 minutes) for a 1-minute load
#                      average below N
#   ENVOY_BIN          the Envoy binary (default .tools/bin/envoy)
# Every step runs even when an earlier one failed; the script exits 1 if any
# failed (the report names them).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
out=bench/out
export ENVOY_BIN=${ENVOY_BIN:-$root/.tools/bin/envoy}
quick=${BENCH_QUICK:-0}

for f in bin/thaw bin/workload "$ENVOY_BIN"; do
	[ -x "$f" ] || { echo "bench: $f missing: run make tools build" >&2; exit 1; }
done

if [ -n "${BENCH_MAX_LOAD:-}" ]; then
	for _ in $(seq 20); do
		load=$(cut -d' ' -f1 /proc/loadavg)
		awk -v l="$load" -v m="$BENCH_MAX_LOAD" 'BEGIN { exit !(l < m) }' && break
		echo "bench: load average $load >= $BENCH_MAX_LOAD; waiting 30 s" >&2
		sleep 30
	done
fi

# bench/ is a Go module of its own (bench/go.mod): its commands are built
# into bin/ and run from the repository root, where their defaults point.
go -C bench build -o "$root/bin/bench-scenarios" ./scenarios
go -C bench build -o "$root/bin/bench-report" ./report

rm -rf "$out"
mkdir -p "$out" docs
cp /proc/loadavg "$out/load-start"
: > "$out/commands.tsv"
failed=()

# quote prints a command the way one would type it.
quote() {
	local a words=()
	for a in "$@"; do
		if [[ $a =~ ^[A-Za-z0-9_./=:,+-]+$ ]]; then words+=("$a"); else words+=("'$a'"); fi
	done
	echo "${words[*]}"
}

# run NAME CMD...: runs CMD, keeps its output in $out/NAME.txt and records
# the command, its exit status and its duration in $out/commands.tsv.
run() {
	local name=$1 t0=$SECONDS rc
	shift
	echo "== $name: $(quote "$@")" >&2
	set +e
	"$@" 2>&1 | tee "$out/$name.txt"
	rc=${PIPESTATUS[0]}
	set -e
	printf '%s\t%s\t%d\t%d\n' "$name" "$(quote "$@")" "$rc" "$((SECONDS - t0))" >> "$out/commands.tsv"
	if [ "$rc" -ne 0 ]; then failed+=("$name"); fi
}

# Iterations per package, chosen so the micro-benchmarks take a few minutes
# in all (BENCH_QUICK: one iteration each, as CI runs them).
bt() { if [ "$quick" = 1 ]; then echo 1x; else echo "$1"; fi; }
micro=(go test -run '^$' -bench . -benchmem)
run micro-autoscaler "${micro[@]}" -benchtime "$(bt 1s)" ./autoscaler/
run micro-statsink "${micro[@]}" -benchtime "$(bt 100x)" ./autoscaler/statsink/
run micro-xds "${micro[@]}" -benchtime "$(bt 1s)" ./xds/
run micro-activator "${micro[@]}" -benchtime "$(bt 1s)" ./activator/
run micro-extproc "${micro[@]}" -benchtime "$(bt 1s)" ./extproc/
run micro-local "${micro[@]}" -benchtime "$(bt 20x)" ./platform/local/
run xds-envoy-10k go test -tags e2e -run '^$' -bench XDSEnvoy10k -benchtime "$(bt 200x)" ./e2e/

scen=(bin/bench-scenarios -out "$out/scenarios.json" -png docs/burst.png)
if [ "$quick" = 1 ]; then scen+=(-quick); fi
run scenarios "${scen[@]}"

# 100,000 revisions, a step of its own (its own time bound and figures
# file): ~4 minutes and ~8 GB of memory.
if [ "${BENCH_SCALE100K:-1}" = 1 ]; then
	large=(bin/bench-scenarios -only scale100k -timeout 20m -out "$out/scale100k.json" -png "")
	if [ "$quick" = 1 ]; then large+=(-quick); fi
	run scale100k "${large[@]}"
fi

# The peers (KEDA HTTP add-on interceptor, Knative queue-proxy) in a
# network namespace of their own; a peer that fails is named in the report.
peers=(bin/bench-scenarios -only peers -out "$out/peers.json")
if [ "$quick" = 1 ]; then peers+=(-quick); fi
run peers "${peers[@]}"

cp /proc/loadavg "$out/load-end"
bin/bench-report -dir "$out" -o docs/BENCHMARKS.md
if [ "${#failed[@]}" -gt 0 ]; then
	echo "bench: failed: ${failed[*]} (see docs/BENCHMARKS.md and $out/)" >&2
	exit 1
fi
echo "bench: docs/BENCHMARKS.md and docs/burst.png written" >&2
