#!/usr/bin/env bash
# hack/module-startup.sh N MODE [MODULE.so]: Envoy's start-up CPU with N
# revision routes on the activator module, without thaw (docs/scaling.md,
# *The module's start-up cost*). One Envoy (2 workers) loads a static
# bootstrap: a listener with the module filter (its state stream points
# at a closed loopback port) and N virtual hosts of one route each. MODE:
#   none      routes without per-route configuration (the baseline)
#   perroute  each route with the module's per-route configuration, as
#             thaw sends it (DynamicModuleFilterPerRoute naming the revision)
#   metadata  each route with filter_metadata naming the revision instead
# Prints Envoy's CPU (user+sys from /proc) once /ready says LIVE, its RSS,
# and the load average. Needs `make tools build` and python3. Environment:
#   ENVOY_BIN  the Envoy binary (default .tools/bin/envoy)
#   ADMIN_PORT, LISTEN_PORT  loopback ports (default 18902, 18901)
#   PERF=1     record `perf record -g` of the start into module-startup.perf
set -euo pipefail
# shellcheck source=lib/envoy.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/envoy.sh"
n=${1:?N routes}; mode=${2:?none|perroute|metadata}
so=$(realpath "${3:-bin/thaw-activator.so}")
envoy=${ENVOY_BIN:-.tools/bin/envoy}
admin=${ADMIN_PORT:-18902}; listen=${LISTEN_PORT:-18901}
dir=$(mktemp -d); trap 'rm -rf "$dir"' EXIT
python3 - "$n" "$mode" "$so" "$listen" "$admin" >"$dir/bootstrap.json" <<'EOF'
import json, sys
n, mode, so, listen, admin = int(sys.argv[1]), sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
src = {"do_not_close": True, "module": {"local": {"filename": so}}}
fc = json.dumps({"stateURL": "http://127.0.0.1:1/state", "reportURL": "http://127.0.0.1:1/report",
                 "node": "n", "holdTimeoutMs": 1000})
dm = "type.googleapis.com/envoy.extensions.filters.http.dynamic_modules.v3."
sv = "type.googleapis.com/google.protobuf.StringValue"
vhs = []
for i in range(n):
    r = {"match": {"prefix": "/"}, "route": {"cluster": "c"}}
    rev = "default/r%d" % i
    if mode == "perroute":
        r["typed_per_filter_config"] = {"thaw_activator": {"@type": dm + "DynamicModuleFilterPerRoute",
            "dynamic_module_config": src, "per_route_config_name": "thaw_activator",
            "filter_config": {"@type": sv, "value": json.dumps({"revision": rev})}}}
    elif mode == "metadata":
        r["metadata"] = {"filter_metadata": {"thaw": {"revision": rev}}}
    elif mode != "none":
        sys.exit("MODE: none, perroute or metadata")
    vhs.append({"name": "v%d" % i, "domains": ["r%d.example" % i], "routes": [r]})
addr = lambda p: {"socket_address": {"address": "127.0.0.1", "port_value": p}}
hcm = {"@type": "type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager",
       "stat_prefix": "h", "route_config": {"name": "rc", "virtual_hosts": vhs},
       "http_filters": [
           {"name": "thaw_activator", "typed_config": {"@type": dm + "DynamicModuleFilter",
               "dynamic_module_config": src, "filter_name": "thaw_activator",
               "filter_config": {"@type": sv, "value": fc}}},
           {"name": "envoy.filters.http.router", "typed_config": {
               "@type": "type.googleapis.com/envoy.extensions.filters.http.router.v3.Router"}}]}
print(json.dumps({"admin": {"address": addr(admin)}, "static_resources": {
    "clusters": [{"name": "c", "type": "STATIC", "load_assignment": {"cluster_name": "c",
        "endpoints": [{"lb_endpoints": [{"endpoint": {"address": addr(9)}}]}]}}],
    "listeners": [{"name": "l", "address": addr(listen), "filter_chains": [{"filters": [
        {"name": "envoy.filters.network.http_connection_manager", "typed_config": hcm}]}]}]}}))
EOF
cmd=("$envoy" -c "$dir/bootstrap.json" --concurrency 2 -l warning --base-id "$admin")
if [[ ${PERF:-0} == 1 ]]; then cmd=(perf record -F 499 -g -o module-startup.perf -- "${cmd[@]}"); fi
"${cmd[@]}" >"$dir/envoy.log" 2>&1 &
pid=$!
start=$(date +%s.%N)
envoy_wait_ready "$pid" "$admin" "$dir/envoy.log" 3000
end=$(date +%s.%N)
epid=$pid
if [[ ${PERF:-0} == 1 ]]; then epid=$(pgrep -P "$pid" | head -1); fi
read -r ut st < <(awk '{print $14, $15}' "/proc/$epid/stat")
tck=$(getconf CLK_TCK)
echo "routes=$n mode=$mode ready_s=$(echo "$end - $start" | bc) envoy_cpu_s=$(echo "scale=2; ($ut + $st) / $tck" | bc)" \
  "envoy_rss_kib=$(awk '/VmRSS/{print $2}' "/proc/$epid/status") load=$(cut -d' ' -f1-3 /proc/loadavg)"
kill -INT "$epid"; wait "$pid" 2>/dev/null || true
