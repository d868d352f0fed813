//go:build cgo

package main

/*
#include <stddef.h>
#include <stdint.h>
typedef struct { const char* ptr; size_t length; } thaw_buf;
*/
import "C"

import (
	"errors"
	"os/signal"
	"runtime/cgo"
	"syscall"
	"time"
	"unsafe"

	"github.com/thaw-dev/thaw/module/state"
)

// table is this Envoy's view of every revision, shared by all workers.
var table = state.NewTable(30*time.Second, 10_000)

type filterConfig struct {
	cfg     state.FilterConfig
	answers *answerSet
	conn    *conn
	rev     *state.Revision // cfg.Revision, for routes without per-route config
}

// routeCfg is a revision route's per-route configuration: its revision,
// and its cluster on a cluster route (clusterroute.go), else "".
type routeCfg struct {
	rev     *state.Revision
	cluster string
}

// copyBuf copies an Envoy-owned buffer into Go memory.
func copyBuf(b C.thaw_buf) []byte {
	if b.ptr == nil || b.length == 0 {
		return nil
	}
	return C.GoBytes(unsafe.Pointer(b.ptr), C.int(b.length))
}

//export envoy_dynamic_module_on_program_init
func envoy_dynamic_module_on_program_init() (v *C.char) {
	defer func() {
		if p := recover(); p != nil {
			logf("panic at load: %v", p)
			v = nil
		}
	}()
	// Envoy ignores SIGPIPE; Go's runtime, loaded as a library, installs
	// its own handler and kills the process when a write to stderr (fd 2)
	// hits a closed pipe: the module's log lines, once the process that
	// reads Envoy's stderr (thaw local) is gone. Ignore it in Go too.
	signal.Ignore(syscall.SIGPIPE)
	setProcs()
	if err := resolveCallbacks(); err != nil {
		logf("%v", err)
		return nil
	}
	return abiVersionPtr()
}

//export envoy_dynamic_module_on_http_filter_config_new
func envoy_dynamic_module_on_http_filter_config_new(a1 uintptr, name, config C.thaw_buf) (h uintptr) {
	defer func() {
		if p := recover(); p != nil {
			logf("panic in filter config: %v", p)
			h = 0
		}
	}()
	cfg, err := state.DecodeFilterConfig(copyBuf(config))
	if err != nil {
		logf("filter %q: %v", copyBuf(name), err)
		return 0
	}
	table.SetDefaults(time.Duration(cfg.HoldTimeoutMs)*time.Millisecond, cfg.QueueDepth)
	fc := &filterConfig{cfg: cfg, answers: answersFor(cfg.RetryAfterSeconds)}
	if cfg.Revision != "" {
		if fc.rev = table.Revision(cfg.Revision); fc.rev == nil {
			logf("filter config for %s refused: the module tracks at most %d revisions", cfg.Revision, state.MaxRevisions)
			return 0
		}
	}
	fc.conn = acquireConn(cfg)
	return uintptr(cgo.NewHandle(fc))
}

//export envoy_dynamic_module_on_http_filter_config_destroy
func envoy_dynamic_module_on_http_filter_config_destroy(h uintptr) {
	defer recoverLog("filter config destroy")
	if h == 0 {
		return
	}
	fc := cgo.Handle(h).Value().(*filterConfig)
	releaseConn(fc.conn)
	cgo.Handle(h).Delete()
}

//export envoy_dynamic_module_on_http_filter_per_route_config_new
func envoy_dynamic_module_on_http_filter_per_route_config_new(a1, config C.thaw_buf) (h uintptr) {
	defer func() {
		if p := recover(); p != nil {
			logf("panic in route config: %v", p)
			h = 0
		}
	}()
	h, err := newRouteCfg(table, copyBuf(config))
	if err != nil {
		logf("%v", err)
		return 0
	}
	return h
}

//export envoy_dynamic_module_on_http_filter_per_route_config_destroy
func envoy_dynamic_module_on_http_filter_per_route_config_destroy(h uintptr) {
	defer recoverLog("route config destroy")
	if h != 0 {
		freeRouteCfg(h)
	}
}

//export envoy_dynamic_module_on_http_filter_new
func envoy_dynamic_module_on_http_filter_new(cfg uintptr, a1 uintptr) (id uintptr) {
	defer func() {
		if p := recover(); p != nil {
			logf("panic in filter new: %v", p)
			id = 0
		}
	}()
	f := newFilter()
	if f == nil {
		logf("stream refused: %d streams in the module at once (its limit)", maxFilters)
		return 0
	}
	f.cfg = cgo.Handle(cfg).Value().(*filterConfig)
	return uintptr(f.id)
}

//export envoy_dynamic_module_on_http_filter_request_headers
func envoy_dynamic_module_on_http_filter_request_headers(ep, mod uintptr, a1 bool) (st int32) {
	f := lookupFilter(mod)
	defer func() {
		if p := recover(); p != nil {
			logf("panic on request headers: %v", p)
			st = failRequest(ep, f)
		}
	}()
	if f == nil {
		routeUnfiltered(ep)
		return statusContinue
	}
	r := f.cfg.rev
	if rc := routeOf(ep); rc != nil {
		r, f.cluster = rc.rev, rc.cluster
	}
	if r == nil {
		return statusContinue // not a revision route: nothing to do
	}
	f.rev = r
	if f.cluster != "" {
		routeToCluster(ep, f.cluster) // before anything reads the header
	}
	// Envoy's cluster for the revision lists fewer hosts than this state
	// has backends: a removal reached Envoy first. A pin now could get
	// 503 "no healthy upstream"; hold and re-pick at the next state update
	// instead (docs/activator.md, *Removal ordering*).
	behind := false
	if n := r.Confirmed(); n > 0 {
		behind = envoyBehind(ep, f, n)
		// On a cluster route, not behind means Envoy resolved the route
		// to the revision's cluster just now: a resume needs no second
		// route-cache clear (routed).
		f.routed = f.cluster != "" && !behind
	}
	if !behind {
		if b := r.Acquire(); b != nil {
			f.backend = b
			pin(ep, f, b)
			return statusContinue
		}
	}
	f.grpc = isGRPC(ep)
	if wakeAnswer(ep, f, r) {
		return statusStopIteration
	}
	h := &holdRef{sched: schedulerNew(ep)}
	h.refs.Store(2)
	hold := r.HoldNotify
	if behind {
		hold = r.HoldForUpdateNotify
	}
	w, err := hold(h)
	if err != nil {
		h.refs.Store(1)
		h.drop()
		var wf *state.WakeFailedError
		if errors.As(err, &wf) {
			sendWakeFailure(ep, f, r.Key, wf.Failure)
			return statusStopIteration
		}
		if errors.Is(err, state.ErrHeldLimit) {
			sendAnswer(ep, f.cfg.answers.heldLimit, f.grpc)
			return statusStopIteration
		}
		sendAnswer(ep, f.cfg.answers.queueFull, f.grpc)
		return statusStopIteration
	}
	if st, b := w.Claim(); st == state.Granted {
		h.refs.Store(1)
		h.drop()
		f.backend = b
		pin(ep, f, b)
		return statusContinue
	}
	f.waiter, f.hold, f.heldAt = w, h, time.Now()
	return statusStopAllIterationAndWatermark
}

//export envoy_dynamic_module_on_http_filter_scheduled
func envoy_dynamic_module_on_http_filter_scheduled(ep, mod uintptr, a1 uint64) {
	f := lookupFilter(mod)
	defer func() {
		if p := recover(); p != nil {
			logf("panic on resume: %v", p)
			failRequest(ep, f)
		}
	}()
	if f == nil || f.waiter == nil {
		return
	}
	w := f.waiter
	st, b := w.Claim()
	switch st {
	case state.Granted:
		f.waiter = nil
		f.backend = b
		if f.cluster != "" && !f.routed {
			routeToCluster(ep, f.cluster) // the cluster may have come since
		}
		if rehold(ep, f) {
			f.routed = false // resolve the route again at the next grant
			return
		}
		if f.rev.ColdStartHeader() {
			f.coldStart, f.coldStartMs = true, time.Since(f.heldAt).Milliseconds()
		}
		pin(ep, f, f.backend)
		continueDecoding(ep)
	case state.TimedOut:
		f.waiter = nil
		sendAnswer(ep, f.cfg.answers.holdTimeout, f.grpc)
	case state.WakeFailed:
		f.waiter = nil
		sendWakeFailure(ep, f, f.rev.Key, w.Failure())
	}
}

// failRequest answers a request whose hook panicked with a 503 (once).
func failRequest(ep uintptr, f *filter) int32 {
	if f != nil {
		if f.failed {
			return statusStopIteration
		}
		f.failed = true
		endFilter(f)
		sendAnswer(ep, f.cfg.answers.moduleError, f.grpc)
		return statusStopIteration
	}
	sendAnswer(ep, answersFor(1).moduleError, false)
	return statusStopIteration
}

// endFilter frees what a stream holds: its slot, its place in a queue,
// its scheduler reference. Idempotent.
func endFilter(f *filter) {
	if w := f.waiter; w != nil {
		f.waiter = nil
		b, wasWaiting := w.Cancel()
		if b != nil {
			f.rev.Release(b)
		}
		if wasWaiting {
			f.hold.drop() // the notifier's reference: it will never run
		}
	}
	if b := f.backend; b != nil {
		f.backend = nil
		if f.early {
			f.early = false
			f.rev.EndEarly()
		}
		f.rev.Release(b)
	}
	if h := f.hold; h != nil {
		f.hold = nil
		h.drop()
	}
}

//export envoy_dynamic_module_on_http_filter_response_headers
func envoy_dynamic_module_on_http_filter_response_headers(ep, mod uintptr, a1 bool) int32 {
	defer recoverLog("response headers")
	if f := lookupFilter(mod); f != nil && f.coldStart {
		f.coldStart = false
		setColdStart(ep, f)
	}
	return statusContinue
}

//export envoy_dynamic_module_on_http_filter_stream_complete
func envoy_dynamic_module_on_http_filter_stream_complete(a1, mod uintptr) {
	defer recoverLog("stream complete")
	if f := lookupFilter(mod); f != nil {
		endFilter(f)
	}
	maybeYield()
}

//export envoy_dynamic_module_on_http_filter_destroy
func envoy_dynamic_module_on_http_filter_destroy(mod uintptr) {
	defer recoverLog("filter destroy")
	if f := lookupFilter(mod); f != nil && f.id != 0 {
		endFilter(f)
		freeFilter(f)
	}
}

func recoverLog(where string) {
	if p := recover(); p != nil {
		logf("panic in %s: %v", where, p)
	}
}
