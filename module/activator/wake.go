//go:build cgo

package main

/*
#include <stdlib.h>
typedef struct {
  const char* key_ptr; size_t key_length;
  const char* value_ptr; size_t value_length;
} thaw_header;
*/
import "C"

import (
	"strconv"
	"strings"
	"time"
	"unsafe"

	"github.com/thaw-dev/thaw/module/state"
	"github.com/thaw-dev/thaw/wake"
)

// The wake policy on the module path (package wake; docs/activator.md).
// A request Acquire could not place, for a revision at zero whose policy
// answers some requests, is evaluated here on Envoy's worker: the policy
// was compiled when thaw's state stream last changed it (state.Table.Apply),
// never per request, and nothing here runs for a request that got a slot.

// Details of the wake answers (Envoy's %RESPONSE_CODE_DETAILS%), as on the
// ext_proc path.
const (
	detailsWakeRule    = "thaw_wake_rule"
	detailsWaitingPage = "thaw_wake_waiting_page"
	detailsWakeFailed  = "thaw_activator_wake_failed"
	// wakeFailureHeader is extproc.WakeFailureHeader (the module does not
	// import the ext_proc server).
	wakeFailureHeader = "x-thaw-wake-failure"
)

// wakeRequest is what the policy's rules see of the request on ep: its
// headers are read from Envoy's map (and copied) only when a rule asks.
func wakeRequest(ep uintptr) wake.Request {
	method, _ := requestHeader(ep, ":method")
	path, _ := requestHeader(ep, ":path")
	return wake.Request{Method: method, Path: path, Header: func(name string) (string, bool) {
		return requestHeader(ep, name)
	}}
}

// wakeAnswer applies revision r's wake policy to the request on ep and
// answers it when the policy says so (true: answered, stop the stream).
func wakeAnswer(ep uintptr, f *filter, r *state.Revision) bool {
	action, rule := r.WakeAnswer(func() wake.Request { return wakeRequest(ep) })
	switch action {
	case wake.Static:
		if rule.Response == nil {
			sendAnswer(ep, f.cfg.answers.asleep, f.grpc)
			return true
		}
		sendDynamic(ep, rule.Response.Status, rule.Response.Headers, rule.Response.Body, detailsWakeRule)
		return true
	case wake.WaitingPage:
		pol, _ := r.WakePolicy()
		if pol == nil || pol.Page == nil {
			return false // the policy changed meanwhile: hold as usual
		}
		hs := []wake.Header{{Name: "content-type", Value: "text/html; charset=utf-8"}, {Name: "cache-control", Value: "no-store"}}
		if pol.Page.Status == 503 {
			secs := int64((pol.Page.Refresh + time.Second - 1) / time.Second)
			hs = append(hs, wake.Header{Name: "retry-after", Value: strconv.FormatInt(secs, 10)})
		}
		sendDynamic(ep, pol.Page.Status, hs, pol.Page.Body, detailsWaitingPage)
		return true
	}
	return false
}

// sendDynamic sends a local reply built from Go values. send_response
// reads a header array that must hold no Go pointer, so everything is
// copied into one C block for the call and freed after it (Envoy copies
// the reply). Only answers at zero (wake policies, failed wake-ups) take
// this path. grpc sends the trailers-only gRPC form instead: HTTP 200,
// grpc-status 14 (UNAVAILABLE) and the body as grpc-message, the other
// headers kept.
func sendDynamic(ep uintptr, code int, headers []wake.Header, body, details string) {
	sendDynamicAs(ep, code, headers, body, details, false)
}

func sendDynamicAs(ep uintptr, code int, headers []wake.Header, body, details string, grpc bool) {
	if grpc {
		hs := []wake.Header{{Name: ":status", Value: "200"}, {Name: "content-type", Value: "application/grpc"},
			{Name: "grpc-status", Value: "14"}, {Name: "grpc-message", Value: strings.TrimSuffix(body, "\n")}}
		for _, h := range headers {
			if h.Name != "content-type" {
				hs = append(hs, h)
			}
		}
		headers, body, details = hs, "", ""
	}
	size := uintptr(len(headers)) * unsafe.Sizeof(C.thaw_header{})
	for _, h := range headers {
		size += uintptr(len(h.Name) + len(h.Value))
	}
	size += uintptr(len(body) + len(details))
	block := C.malloc(C.size_t(max(size, 1)))
	defer C.free(block)
	mem := unsafe.Slice((*byte)(block), max(size, 1))
	hs := unsafe.Slice((*C.thaw_header)(block), len(headers))
	off := uintptr(len(headers)) * unsafe.Sizeof(C.thaw_header{})
	put := func(s string) (*C.char, int) {
		if len(s) == 0 {
			return nil, 0
		}
		p := (*C.char)(unsafe.Pointer(&mem[off]))
		off += uintptr(copy(mem[off:], s))
		return p, len(s)
	}
	for i, h := range headers {
		kp, kn := put(h.Name)
		vp, vn := put(h.Value)
		hs[i] = C.thaw_header{key_ptr: kp, key_length: C.size_t(kn), value_ptr: vp, value_length: C.size_t(vn)}
	}
	var hp *C.thaw_header
	if len(headers) > 0 {
		hp = &hs[0]
	}
	if grpc {
		sendHeaders(ep, hp, len(headers))
		return
	}
	bp, bn := put(body)
	dp, dn := put(details)
	sendResponse(ep, uint32(code), hp, len(headers), bp, bn, dp, dn)
}

// sendWakeFailure answers a request of revision key whose wake-up failed
// (f): 503, Retry-After until the platform's next attempt, the reason in
// x-thaw-wake-failure, as the ext_proc activator answers.
func sendWakeFailure(ep uintptr, f *filter, key string, wf *state.WakeFailure) {
	hs := []wake.Header{{Name: "content-type", Value: "text/plain; charset=utf-8"},
		{Name: "retry-after", Value: strconv.FormatInt(wf.RetryAfter(time.Now()), 10)},
		{Name: wakeFailureHeader, Value: wf.Reason}}
	sendDynamicAs(ep, 503, hs, wf.Body(key), detailsWakeFailed, f.grpc)
}

// coldStartKey is wake.HeaderColdStart in C memory.
var coldStartKey = C.CString(wake.HeaderColdStart)

// setColdStart adds the cold-start header (milliseconds held) to the
// response on ep. The value is formatted into the filter's own buffer (Go
// memory without pointers, read by Envoy during the call only).
func setColdStart(ep uintptr, f *filter) {
	v := strconv.AppendInt(f.coldStartBuf[:0], f.coldStartMs, 10)
	setResponseHeader(ep, coldStartKey, len(wake.HeaderColdStart), v)
}
