//go:build cgo

package main

/*
#include <stdint.h>

// thaw_worker_id: this Envoy thread's number (0, 1, ...), given on its
// first ask; -1 until then. One per thread, no lock.
static __thread int32_t thaw_worker_id = -1;
static int32_t thaw_next_worker;

static int32_t thaw_worker(void) {
  if (thaw_worker_id < 0) {
    thaw_worker_id = __atomic_fetch_add(&thaw_next_worker, 1, __ATOMIC_RELAXED);
  }
  return thaw_worker_id;
}
*/
import "C"

import "github.com/thaw-dev/thaw/module/state"

// workerID returns a number for the calling Envoy thread, stable for its
// life: a held request records it (state.Revision.HoldNotifyOn), and a
// slot freed on the same worker goes to a request held there first
// (state.Revision.ReleaseOn), so its resume needs no post to another
// worker's dispatcher (module/state/local.go). Only hooks call it, on
// Envoy's worker threads.
func workerID() int32 { return int32(C.thaw_worker()) }

// release frees the slot of f on backend b, preferring a request held on
// the calling worker when the revision holds any.
func release(f *filter, b *state.Backend) {
	w := state.NoWorker
	if f.rev.Held() > 0 {
		w = workerID()
	}
	f.rev.ReleaseOn(b, w)
}
