//go:build cgo

package main

/*
#cgo LDFLAGS: -ldl
#include <dlfcn.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

// Layouts of the ABI's envoy_dynamic_module_type_{envoy,module}_buffer and
// envoy_dynamic_module_type_module_http_header (same fields, same order).
typedef struct { const char* ptr; size_t length; } thaw_buf;
typedef struct {
  const char* key_ptr; size_t key_length;
  const char* value_ptr; size_t value_length;
} thaw_header;

// The ABI version string this module was written against.
static const char thaw_abi_version[] = "v0.2.0";

// Callbacks this module calls, resolved when Envoy loads it. Keep the
// order in step with the THAW_CB_* indices and abi_test.go.
enum {
  THAW_CB_OVERRIDE_HOST,
  THAW_CB_ROUTE_CONFIG,
  THAW_CB_CONTINUE_DECODING,
  THAW_CB_SEND_RESPONSE,
  THAW_CB_SCHED_NEW,
  THAW_CB_SCHED_COMMIT,
  THAW_CB_SCHED_DELETE,
  THAW_CB_GET_HEADER,
  THAW_CB_SEND_HEADERS,
  THAW_CB_SET_HEADER,
  THAW_CB_HOST_COUNT,
  THAW_CB_CLEAR_ROUTE,
  THAW_CB_SET_METADATA,
  THAW_CB_COUNT
};
static const char* const thaw_cb_names[THAW_CB_COUNT] = {
  "envoy_dynamic_module_callback_http_set_upstream_override_host",
  "envoy_dynamic_module_callback_get_most_specific_route_config",
  "envoy_dynamic_module_callback_http_filter_continue_decoding",
  "envoy_dynamic_module_callback_http_send_response",
  "envoy_dynamic_module_callback_http_filter_scheduler_new",
  "envoy_dynamic_module_callback_http_filter_scheduler_commit",
  "envoy_dynamic_module_callback_http_filter_scheduler_delete",
  "envoy_dynamic_module_callback_http_get_header",
  "envoy_dynamic_module_callback_http_send_response_headers",
  "envoy_dynamic_module_callback_http_set_header",
  "envoy_dynamic_module_callback_http_get_cluster_host_count",
  "envoy_dynamic_module_callback_http_clear_route_cache",
  "envoy_dynamic_module_callback_http_set_dynamic_metadata_string",
};
static void* thaw_cb[THAW_CB_COUNT];

static const char* thaw_abi(void) { return thaw_abi_version; }
static const char* thaw_cb_name(int i) { return thaw_cb_names[i]; }

// thaw_resolve looks every callback up in the process (Envoy exports
// them); it returns the name of the first one missing, or NULL.
static const char* thaw_resolve(void) {
  for (int i = 0; i < THAW_CB_COUNT; i++) {
    thaw_cb[i] = dlsym(RTLD_DEFAULT, thaw_cb_names[i]);
    if (thaw_cb[i] == NULL) return thaw_cb_names[i];
  }
  return NULL;
}

static bool thaw_override_host(uintptr_t f, const char* p, size_t n, bool strict) {
  return ((bool (*)(uintptr_t, thaw_buf, bool))thaw_cb[THAW_CB_OVERRIDE_HOST])(f, (thaw_buf){p, n}, strict);
}
static uintptr_t thaw_route_config(uintptr_t f) {
  return (uintptr_t)((const void* (*)(uintptr_t))thaw_cb[THAW_CB_ROUTE_CONFIG])(f);
}
static void thaw_continue_decoding(uintptr_t f) {
  ((void (*)(uintptr_t))thaw_cb[THAW_CB_CONTINUE_DECODING])(f);
}
static void thaw_send_response(uintptr_t f, uint32_t code, const thaw_header* h, size_t nh,
                               const char* body, size_t nbody, const char* details, size_t ndetails) {
  ((void (*)(uintptr_t, uint32_t, const thaw_header*, size_t, thaw_buf, thaw_buf))
       thaw_cb[THAW_CB_SEND_RESPONSE])(f, code, h, nh, (thaw_buf){body, nbody}, (thaw_buf){details, ndetails});
}
static uintptr_t thaw_sched_new(uintptr_t f) {
  return (uintptr_t)((void* (*)(uintptr_t))thaw_cb[THAW_CB_SCHED_NEW])(f);
}
static void thaw_sched_commit(uintptr_t s, uint64_t id) {
  ((void (*)(uintptr_t, uint64_t))thaw_cb[THAW_CB_SCHED_COMMIT])(s, id);
}
static void thaw_sched_delete(uintptr_t s) {
  ((void (*)(uintptr_t))thaw_cb[THAW_CB_SCHED_DELETE])(s);
}
// thaw_is_grpc reports whether the request's content-type starts with
// application/grpc, reading Envoy's buffer in place (header type 0 is the
// ABI's RequestHeader).
static bool thaw_is_grpc(uintptr_t f) {
  static const char key[] = "content-type";
  static const char want[] = "application/grpc";
  thaw_buf v = {0, 0};
  bool ok = ((bool (*)(uintptr_t, int, thaw_buf, thaw_buf*, size_t, size_t*))thaw_cb[THAW_CB_GET_HEADER])(
      f, 0, (thaw_buf){key, sizeof(key) - 1}, &v, 0, NULL);
  if (!ok || v.ptr == NULL || v.length < sizeof(want) - 1) return false;
  for (size_t i = 0; i < sizeof(want) - 1; i++) {
    if (v.ptr[i] != want[i]) return false;
  }
  return true;
}
// thaw_request_header reads the first value of request header k (header
// type 0, RequestHeader) into out, pointing into Envoy's buffer.
static bool thaw_request_header(uintptr_t f, const char* k, size_t nk, thaw_buf* out) {
  return ((bool (*)(uintptr_t, int, thaw_buf, thaw_buf*, size_t, size_t*))thaw_cb[THAW_CB_GET_HEADER])(
      f, 0, (thaw_buf){k, nk}, out, 0, NULL);
}
// thaw_set_response_header sets response header k to v (header type 2,
// ResponseHeader); Envoy copies both.
static bool thaw_set_response_header(uintptr_t f, const char* k, size_t nk, const char* v, size_t nv) {
  return ((bool (*)(uintptr_t, int, thaw_buf, thaw_buf))thaw_cb[THAW_CB_SET_HEADER])(
      f, 2, (thaw_buf){k, nk}, (thaw_buf){v, nv});
}
// thaw_cluster_hosts returns how many hosts the routed cluster (the
// revision's own) lists at priority 0 in this worker's view; -1 when
// Envoy cannot tell (no route, no cluster).
static long thaw_cluster_hosts(uintptr_t f) {
  size_t total = 0, healthy = 0, degraded = 0;
  bool ok = ((bool (*)(uintptr_t, uint32_t, size_t*, size_t*, size_t*))thaw_cb[THAW_CB_HOST_COUNT])(
      f, 0, &total, &healthy, &degraded);
  return ok ? (long)total : -1;
}
// thaw_route_to_cluster sets request header k (header type 0,
// RequestHeader; every existing value is removed first) to the cluster
// name v and clears the stream's route cache, so the route (whose
// cluster_header is k) and its cluster are resolved again from it.
static bool thaw_route_to_cluster(uintptr_t f, const char* k, size_t nk, const char* v, size_t nv) {
  bool ok = ((bool (*)(uintptr_t, int, thaw_buf, thaw_buf))thaw_cb[THAW_CB_SET_HEADER])(
      f, 0, (thaw_buf){k, nk}, (thaw_buf){v, nv});
  ((void (*)(uintptr_t))thaw_cb[THAW_CB_CLEAR_ROUTE])(f);
  return ok;
}
// thaw_set_metadata sets the request's dynamic metadata ns/k to the string
// v; Envoy copies all three.
static void thaw_set_metadata(uintptr_t f, const char* ns, size_t nns, const char* k, size_t nk,
                              const char* v, size_t nv) {
  ((void (*)(uintptr_t, thaw_buf, thaw_buf, thaw_buf))thaw_cb[THAW_CB_SET_METADATA])(
      f, (thaw_buf){ns, nns}, (thaw_buf){k, nk}, (thaw_buf){v, nv});
}
static void thaw_send_headers(uintptr_t f, const thaw_header* h, size_t nh) {
  ((void (*)(uintptr_t, const thaw_header*, size_t, bool))thaw_cb[THAW_CB_SEND_HEADERS])(f, h, nh, true);
}
*/
import "C"

import (
	"fmt"
	"os"
	"unsafe"

	"github.com/thaw-dev/thaw/module/state"
)

// Statuses of the ABI's envoy_dynamic_module_type_on_http_filter_*_status
// enums (values in declaration order).
const (
	statusContinue                     = 0
	statusStopIteration                = 1
	statusStopAllIterationAndWatermark = 4
)

// abiVersion is the ABI version string returned to Envoy.
var abiVersion = C.GoString(C.thaw_abi())

// resolveCallbacks resolves every callback; the error names the first
// missing one.
func resolveCallbacks() error {
	if missing := C.thaw_resolve(); missing != nil {
		return fmt.Errorf("thaw activator module: this Envoy does not export %s (module written for dynamic-module ABI %s); refusing to load",
			C.GoString(missing), abiVersion)
	}
	return nil
}

// abiVersionPtr is the ABI version as the C string Envoy reads.
func abiVersionPtr() *C.char { return C.thaw_abi() }

// callbackNames returns the callbacks the module resolves (for tests).
func callbackNames() []string {
	out := make([]string, 0, C.THAW_CB_COUNT)
	for i := 0; i < C.THAW_CB_COUNT; i++ {
		out = append(out, C.GoString(C.thaw_cb_name(C.int(i))))
	}
	return out
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "thaw-activator: "+format+"\n", args...)
}

// setOverrideHost pins the request to addr ("ip:port") on the routed
// cluster, strictly (no fallback to another host). Envoy copies addr.
func setOverrideHost(f uintptr, addr string) bool {
	return bool(C.thaw_override_host(C.uintptr_t(f), (*C.char)(unsafe.Pointer(unsafe.StringData(addr))), C.size_t(len(addr)), true))
}

// setDestination sets the request's dynamic metadata that
// state.DstCluster reads its destination from to addr ("ip:port").
// Envoy copies every string.
func setDestination(f uintptr, addr string) {
	ns, k := state.DstMetadataNamespace, state.DstMetadataKey
	C.thaw_set_metadata(C.uintptr_t(f),
		(*C.char)(unsafe.Pointer(unsafe.StringData(ns))), C.size_t(len(ns)),
		(*C.char)(unsafe.Pointer(unsafe.StringData(k))), C.size_t(len(k)),
		(*C.char)(unsafe.Pointer(unsafe.StringData(addr))), C.size_t(len(addr)))
}

// behindRemoval reports whether Envoy's routed cluster (the revision's
// own, the one the module pins to) lists fewer hosts in this worker's
// view than the module's state has backends (backends > 0): an endpoint
// removal reached Envoy before the state update that removes the backend
// reached the module, so a pin now could name a host Envoy dropped and
// fail with 503 "no healthy upstream" (docs/activator.md, *Removal
// ordering*). The other way round is normal: thaw sends a backend to the
// module only after this Envoy ACKed endpoints listing it.
func behindRemoval(f uintptr, backends int) bool {
	n := int(C.thaw_cluster_hosts(C.uintptr_t(f)))
	return n >= 0 && n < backends
}

func routeConfig(f uintptr) uintptr  { return uintptr(C.thaw_route_config(C.uintptr_t(f))) }
func continueDecoding(f uintptr)     { C.thaw_continue_decoding(C.uintptr_t(f)) }
func schedulerNew(f uintptr) uintptr { return uintptr(C.thaw_sched_new(C.uintptr_t(f))) }
func schedulerDelete(s uintptr)      { C.thaw_sched_delete(C.uintptr_t(s)) }
func schedulerCommit(s uintptr, id uint64) {
	C.thaw_sched_commit(C.uintptr_t(s), C.uint64_t(id))
}

// sendAnswer sends a fixed local reply; Envoy copies it. A gRPC request
// gets the gRPC form: a trailers-only response (HTTP 200, grpc-status 14
// UNAVAILABLE, grpc-message), as Envoy answers the ext_proc activator's
// 503 for gRPC; Envoy 1.40's send_response would send grpc-status 0.
func sendAnswer(f uintptr, a *answer, grpc bool) {
	if grpc {
		C.thaw_send_headers(C.uintptr_t(f), a.grpcHeaders, C.size_t(a.nGRPCHeaders))
		return
	}
	C.thaw_send_response(C.uintptr_t(f), C.uint32_t(a.code), a.headers, C.size_t(a.nHeaders),
		a.body, C.size_t(a.nBody), a.details, C.size_t(a.nDetails))
}

// requestHeader returns a copy of the first value of request header name
// (lower case; pseudo-headers such as ":path" included).
func requestHeader(f uintptr, name string) (string, bool) {
	var v C.thaw_buf
	if !C.thaw_request_header(C.uintptr_t(f), (*C.char)(unsafe.Pointer(unsafe.StringData(name))), C.size_t(len(name)), &v) || v.ptr == nil {
		return "", false
	}
	return C.GoStringN(v.ptr, C.int(v.length)), true
}

// setResponseHeader sets response header key (C memory, nk bytes) to v
// (Go memory without pointers); Envoy copies both during the call.
func setResponseHeader(f uintptr, key *C.char, nk int, v []byte) bool {
	if len(v) == 0 {
		return false
	}
	return bool(C.thaw_set_response_header(C.uintptr_t(f), key, C.size_t(nk), (*C.char)(unsafe.Pointer(&v[0])), C.size_t(len(v))))
}

// sendResponse sends a local reply whose headers, body and details are in
// C memory; Envoy copies them.
func sendResponse(f uintptr, code uint32, h *C.thaw_header, nh int, body *C.char, nbody int, details *C.char, ndetails int) {
	C.thaw_send_response(C.uintptr_t(f), C.uint32_t(code), h, C.size_t(nh), body, C.size_t(nbody), details, C.size_t(ndetails))
}

// sendHeaders sends a headers-only local reply (end of stream) whose
// headers are in C memory; Envoy copies them.
func sendHeaders(f uintptr, h *C.thaw_header, nh int) {
	C.thaw_send_headers(C.uintptr_t(f), h, C.size_t(nh))
}

// isGRPC reports whether the request is gRPC (content-type).
func isGRPC(f uintptr) bool { return bool(C.thaw_is_grpc(C.uintptr_t(f))) }

// clusterHeaderC is state.ClusterHeader in C memory, for routeToCluster.
var clusterHeaderC = C.CString(state.ClusterHeader)

// routeToCluster overwrites request header state.ClusterHeader with
// cluster (every client-sent value removed) and clears the stream's route
// cache, so the router resolves the route's cluster_header again; Envoy
// copies cluster. false: Envoy had no request headers to set.
func routeToCluster(f uintptr, cluster string) bool {
	return bool(C.thaw_route_to_cluster(C.uintptr_t(f), clusterHeaderC, C.size_t(len(state.ClusterHeader)),
		(*C.char)(unsafe.Pointer(unsafe.StringData(cluster))), C.size_t(len(cluster))))
}

// clusterHosts returns how many hosts the stream's routed cluster lists
// at priority 0 in this worker's view, -1 when Envoy holds no such
// cluster (or the stream has no route).
func clusterHosts(f uintptr) int { return int(C.thaw_cluster_hosts(C.uintptr_t(f))) }
