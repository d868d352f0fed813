//go:build cgo

package main

/*
#include <stdint.h>
#include <stdlib.h>
typedef struct { const char* ptr; size_t length; } thaw_buf;
typedef struct {
  const char* key_ptr; size_t key_length;
  const char* value_ptr; size_t value_length;
} thaw_header;
*/
import "C"

import (
	"strconv"
	"strings"
	"sync"
	"unsafe"
)

// answer is a fixed local reply kept in C memory (send_response reads the
// header array, which must hold no Go pointer), built once and never freed.
type answer struct {
	code     uint32
	headers  *C.thaw_header
	nHeaders int
	// grpcHeaders is the trailers-only gRPC form of the same answer.
	grpcHeaders  *C.thaw_header
	nGRPCHeaders int
	body         *C.char
	nBody        int
	details      *C.char
	nDetails     int
}

// The ext_proc activator's answers (extproc/responses.go): same codes,
// bodies, details and Retry-After. Envoy turns a local reply to a gRPC
// request into a gRPC status itself.
type answerSet struct {
	queueFull, holdTimeout, moduleError *answer
	// heldLimit answers a request past the module's held bound
	// (state.ErrHeldLimit, Envoy's open-file budget) and closes an
	// HTTP/1.1 client's connection, a file, as the ext_proc path does.
	heldLimit *answer
	// asleep answers a request a wake policy rule without a response
	// matched at zero (the ext_proc path's wake_rule answer).
	asleep *answer
}

var (
	answersMu sync.Mutex
	answersBy = map[int]*answerSet{}
)

// answersFor returns the answers with Retry-After retryAfter seconds.
func answersFor(retryAfter int) *answerSet {
	answersMu.Lock()
	defer answersMu.Unlock()
	if a := answersBy[retryAfter]; a != nil {
		return a
	}
	ra := strconv.Itoa(retryAfter)
	a := &answerSet{
		queueFull:   newAnswer(503, "revision is busy: too many requests waiting\n", "thaw_activator_queue_full", ra),
		holdTimeout: newAnswer(503, "revision did not become ready in time\n", "thaw_activator_hold_timeout", ra),
		moduleError: newAnswer(503, "activator module error\n", "thaw_activator_module_error", ra),
		heldLimit: newAnswer(503, "too many requests waiting for cold revisions: Envoy's open-file limit is reached\n",
			"thaw_activator_held_limit", ra, [2]string{"connection", "close"}),
		asleep: newAnswer(503, "revision is asleep; this request does not wake it\n", "thaw_activator_wake_rule", ra),
	}
	answersBy[retryAfter] = a
	return a
}

// cHeaders copies kv into a C array that is never freed.
func cHeaders(kv [][2]string) (*C.thaw_header, int) {
	hs := unsafe.Slice((*C.thaw_header)(C.malloc(C.size_t(unsafe.Sizeof(C.thaw_header{})*uintptr(len(kv))))), len(kv))
	for i, h := range kv {
		hs[i] = C.thaw_header{
			key_ptr: C.CString(h[0]), key_length: C.size_t(len(h[0])),
			value_ptr: C.CString(h[1]), value_length: C.size_t(len(h[1])),
		}
	}
	return &hs[0], len(kv)
}

func newAnswer(code uint32, body, details, retryAfter string, extra ...[2]string) *answer {
	hs, n := cHeaders(append([][2]string{{"content-type", "text/plain; charset=utf-8"}, {"retry-after", retryAfter}}, extra...))
	gs, ng := cHeaders([][2]string{
		{":status", "200"}, {"content-type", "application/grpc"},
		{"grpc-status", "14"}, {"grpc-message", strings.TrimSuffix(body, "\n")},
		{"retry-after", retryAfter},
	})
	return &answer{
		code: code, headers: hs, nHeaders: n, grpcHeaders: gs, nGRPCHeaders: ng,
		body: C.CString(body), nBody: len(body),
		details: C.CString(details), nDetails: len(details),
	}
}
