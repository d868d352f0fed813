#!/usr/bin/env bash
# hack/vhost-memory.sh N CUTS [MODULE.so]: what one revision's virtual host
# costs Envoy in memory, without thaw (docs/scaling.md, "What a virtual
# host costs"). One Envoy (2 workers) loads a static bootstrap: thaw's
# stats_config (envoy/stats-sink.yaml), a listener with the activator
# module (its state stream points at a closed loopback port) and N virtual
# hosts shaped as thaw sends an idle revision's on the module with
# --idle-hold-path (xds/translate/testdata/translate_module_idle.yaml):
# the x-thaw-revision header added, x-thaw-cluster removed, the failover
# retry policy, timeouts, cluster_header and the module's per-route
# configuration. CUTS (comma-separated; "none" is the shape before issue
# 28's cut, and thaw now sends "retryprio,retryhdr") leaves parts out, to
# attribute the cost:
#   perroute   the module's per-route configuration
#   retry      the route's retry policy
#   retryprio  its retry_priority (previous_priorities)
#   retryhdr   its retriable_headers (and retriable-headers in retry_on)
#   retrypred  its retry_host_predicate (previous_hosts)
#   retryback  its retry_back_off
#   addheader  request_headers_to_add
#   rmheader   request_headers_to_remove
#   timeouts   the route's timeout and idle_timeout
#   routename  the route's name
#   vcstats    stats_config: reject vhost.* (the per-virtual-host stats)
#   inclusion  stats_config: thaw's inclusion list left out (Envoy's default)
#   rmlevel    x-thaw-cluster removed once, on the route configuration
#              (with rmheader: the route's own removal left out)
# Prints Envoy's RSS and allocated heap (admin /memory) once /ready says
# LIVE, the number of vhost.* stats, and the CPU to get there. Needs
# `make tools build` and python3 with PyYAML. Environment:
#   ENVOY_BIN  the Envoy binary (default .tools/bin/envoy)
#   ADMIN_PORT, LISTEN_PORT  loopback ports (default 18912, 18911)
#   IDLE_S     also print Envoy's CPU while idle, over this many seconds
set -euo pipefail
# shellcheck source=lib/envoy.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/envoy.sh"
n=${1:?N virtual hosts}; cuts=${2:?CUTS or none}
so=$(realpath "${3:-bin/thaw-activator.so}")
envoy=${ENVOY_BIN:-.tools/bin/envoy}
admin=${ADMIN_PORT:-18912}; listen=${LISTEN_PORT:-18911}
dir=$(mktemp -d); trap 'rm -rf "$dir"' EXIT
python3 - "$n" "$cuts" "$so" "$listen" "$admin" envoy/stats-sink.yaml >"$dir/bootstrap.json" <<'EOF'
import json, sys, yaml
n, cuts, so, listen, admin, sink = int(sys.argv[1]), set(sys.argv[2].split(",")), sys.argv[3], int(sys.argv[4]), int(sys.argv[5]), sys.argv[6]
known = {"none", "perroute", "retry", "retryprio", "retryhdr", "retrypred", "retryback", "addheader", "rmheader", "timeouts", "routename", "vcstats", "inclusion", "rmlevel"}
if cuts - known:
    sys.exit("unknown CUTS: %s (known: %s)" % (",".join(sorted(cuts - known)), ",".join(sorted(known))))
src = {"do_not_close": True, "module": {"local": {"filename": so}}}
fc = json.dumps({"stateURL": "http://127.0.0.1:1/state", "reportURL": "http://127.0.0.1:1/report",
                 "node": "n", "holdTimeoutMs": 1000})
dm = "type.googleapis.com/envoy.extensions.filters.http.dynamic_modules.v3."
sv = "type.googleapis.com/google.protobuf.StringValue"
retry = {"host_selection_retry_max_attempts": "3", "num_retries": 8,
    "retriable_headers": [{"name": "x-thaw-activator-unavailable", "present_match": True}],
    "retry_back_off": {"base_interval": "0.010s", "max_interval": "1s"},
    "retry_host_predicate": [{"name": "envoy.retry_host_predicates.previous_hosts", "typed_config": {
        "@type": "type.googleapis.com/envoy.extensions.retry.host.previous_hosts.v3.PreviousHostsPredicate"}}],
    "retry_on": "connect-failure,refused-stream,reset-before-request,retriable-headers",
    "retry_priority": {"name": "envoy.retry_priorities.previous_priorities", "typed_config": {
        "@type": "type.googleapis.com/envoy.extensions.retry.priority.previous_priorities.v3.PreviousPrioritiesConfig",
        "update_frequency": 1}}}
if "retryprio" in cuts:
    del retry["retry_priority"]
if "retryhdr" in cuts:
    del retry["retriable_headers"]
    retry["retry_on"] = "connect-failure,refused-stream,reset-before-request"
if "retrypred" in cuts:
    del retry["retry_host_predicate"]
if "retryback" in cuts:
    del retry["retry_back_off"]
vhs = []
for i in range(n):
    key, cl = "default/r%d" % i, "rev_default_r%d" % i
    action = {"cluster_header": "x-thaw-cluster"}
    if "timeouts" not in cuts:
        action.update({"idle_timeout": "0s", "timeout": "360s"})
    if "retry" not in cuts:
        action["retry_policy"] = retry
    r = {"match": {"prefix": "/"}, "route": action}
    if "routename" not in cuts:
        r["name"] = cl
    if "addheader" not in cuts:
        r["request_headers_to_add"] = [{"append_action": "OVERWRITE_IF_EXISTS_OR_ADD",
            "header": {"key": "x-thaw-revision", "value": key}}]
    if "rmheader" not in cuts:
        r["request_headers_to_remove"] = ["x-thaw-cluster"]
    if "perroute" not in cuts:
        r["typed_per_filter_config"] = {"thaw_activator": {"@type": dm + "DynamicModuleFilterPerRoute",
            "dynamic_module_config": src, "per_route_config_name": "thaw_activator",
            "filter_config": {"@type": sv, "value": json.dumps({"revision": key, "cluster": cl}, separators=(",", ":"))}}}
    vhs.append({"name": "thaw_http/" + cl, "domains": ["r%d.example.com" % i], "routes": [r]})
rc = {"name": "thaw_http", "virtual_hosts": vhs + [{"name": "thaw_not_found", "domains": ["*"],
    "routes": [{"match": {"prefix": "/"}, "direct_response": {"status": 404}}]}]}
if "rmlevel" in cuts:
    rc["request_headers_to_remove"] = ["x-thaw-cluster"]
addr = lambda p: {"socket_address": {"address": "127.0.0.1", "port_value": p}}
hcm = {"@type": "type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager",
       "stat_prefix": "thaw_http", "route_config": rc,
       "http_filters": [
           {"name": "thaw_activator", "typed_config": {"@type": dm + "DynamicModuleFilter",
               "dynamic_module_config": src, "filter_name": "thaw_activator",
               "filter_config": {"@type": sv, "value": fc}}},
           {"name": "envoy.filters.http.router", "typed_config": {
               "@type": "type.googleapis.com/envoy.extensions.filters.http.router.v3.Router"}}]}
boot = {"admin": {"address": addr(admin)},
    "deferred_stat_options": {"enable_deferred_creation_stats": True},
    "static_resources": {
    "clusters": [{"name": "c", "type": "STATIC", "load_assignment": {"cluster_name": "c",
        "endpoints": [{"lb_endpoints": [{"endpoint": {"address": addr(9)}}]}]}}],
    "listeners": [{"name": "l", "address": addr(listen), "filter_chains": [{"filters": [
        {"name": "envoy.filters.network.http_connection_manager", "typed_config": hcm}]}]}]}}
stats = yaml.safe_load(open(sink))["stats_config"]
if "inclusion" in cuts:
    stats = {}
if "vcstats" in cuts:
    # Reject vhost.* first: an exclusion list cannot sit beside the
    # inclusion list, so the inclusion list's suffixes are narrowed instead.
    pats = stats.get("stats_matcher", {}).get("inclusion_list", {}).get("patterns")
    if pats is None:
        stats = {"stats_matcher": {"exclusion_list": {"patterns": [{"prefix": "vhost."}]}}}
    else:
        stats["stats_matcher"]["inclusion_list"]["patterns"] = [
            {"safe_regex": {"regex": "^(cluster|http)\\..*" + p["suffix"].replace(".", "\\.") + "$"}} if "suffix" in p else p
            for p in pats]
if stats:
    boot["stats_config"] = stats
print(json.dumps(boot))
EOF
"$envoy" -c "$dir/bootstrap.json" --concurrency 2 -l warning --base-id "$admin" >"$dir/envoy.log" 2>&1 &
pid=$!
start=$(date +%s.%N)
envoy_wait_ready "$pid" "$admin" "$dir/envoy.log" 6000
end=$(date +%s.%N)
sleep 2
read -r ut st < <(awk '{print $14, $15}' "/proc/$pid/stat")
tck=$(getconf CLK_TCK)
idle=""
if [[ ${IDLE_S:-0} -gt 0 ]]; then
  read -r u0 s0 < <(awk '{print $14, $15}' "/proc/$pid/stat")
  sleep "$IDLE_S"
  read -r u1 s1 < <(awk '{print $14, $15}' "/proc/$pid/stat")
  idle=" idle_cores=$(echo "scale=3; ($u1 + $s1 - $u0 - $s0) / $tck / $IDLE_S" | bc)"
fi
alloc=$(curl -s "127.0.0.1:$admin/memory" | python3 -c 'import json,sys; m=json.load(sys.stdin); print(int(m["allocated"])//1024, int(m["heap_size"])//1024)')
vstats=$(curl -s "127.0.0.1:$admin/stats?filter=^vhost\." | grep -c . || true)
echo "vhosts=$n cuts=$cuts ready_s=$(echo "$end - $start" | bc) envoy_cpu_s=$(echo "scale=2; ($ut + $st) / $tck" | bc)" \
  "rss_kib=$(awk '/VmRSS/{print $2}' "/proc/$pid/status") allocated_heap_kib=${alloc// /,} vhost_stats=$vstats$idle load=$(cut -d' ' -f1-3 /proc/loadavg)"
kill -INT "$pid"; wait "$pid" 2>/dev/null || true
