//go:build cgo

package main

import (
	"sync"
	"time"

	"github.com/thaw-dev/thaw/module/state"
)

// Requests a hold timeout ended are logged (Envoy's stderr, logf), so a
// wake that never released its requests shows why: whether the module had
// any backend for the revision then (thaw sends one only after this
// Envoy ACKed its endpoints), and whether they were full. At most one
// line per holdLogEvery; the lines left out are counted in the next.
const holdLogEvery = time.Second

var holdLog struct {
	mu      sync.Mutex
	last    time.Time
	dropped int
}

func init() { table.SetOnHoldTimeout(logHoldTimeout) }

// logHoldTimeout runs on the sweep's timer goroutine, never on an Envoy
// thread.
func logHoldTimeout(h state.HoldTimeout) {
	holdLog.mu.Lock()
	now := time.Now()
	if now.Sub(holdLog.last) < holdLogEvery {
		holdLog.dropped++
		holdLog.mu.Unlock()
		return
	}
	holdLog.last = now
	dropped := holdLog.dropped
	holdLog.dropped = 0
	holdLog.mu.Unlock()
	if dropped > 0 {
		logf("%s (%d more hold-timeout lines left out)", h, dropped)
		return
	}
	logf("%s", h)
}
