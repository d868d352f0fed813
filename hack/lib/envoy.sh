# shellcheck shell=bash
# Shared by the hack/ measurement scripts that start an Envoy of their own.

# envoy_wait_ready PID ADMIN_PORT LOG TRIES: polls Envoy's admin /ready on
# 127.0.0.1:ADMIN_PORT every 0.1 s, at most TRIES times, until it says LIVE.
# If the process PID exits first, prints LOG to stderr and exits 1; if it
# is not LIVE after TRIES polls, says so, stops PID and returns 1 (a
# script under set -e stops instead of timing an Envoy that never became
# ready, and leaves no Envoy behind).
envoy_wait_ready() {
	local pid="$1" admin="$2" log="$3" tries="$4"
	for _ in $(seq 1 "$tries"); do
		curl -s -m1 "127.0.0.1:$admin/ready" 2>/dev/null | grep -q LIVE && return 0
		kill -0 "$pid" 2>/dev/null || { cat "$log" >&2; exit 1; }
		sleep 0.1
	done
	echo "envoy (pid $pid) not LIVE on 127.0.0.1:$admin after $tries polls" >&2
	kill "$pid" 2>/dev/null
	return 1
}
