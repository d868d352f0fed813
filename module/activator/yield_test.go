//go:build cgo

package main

import (
	"runtime"
	"testing"
	"time"
)

// TestYieldDue: a thread's first check only starts its period; it is due
// once the period has passed (the sleep guarantees at least that much),
// and not again at once.
func TestYieldDue(t *testing.T) {
	runtime.LockOSThread() // the period is per OS thread
	defer runtime.UnlockOSThread()
	const period = time.Millisecond
	if yieldDue(period) {
		t.Fatal("due on the thread's first check")
	}
	time.Sleep(2 * period)
	if !yieldDue(time.Hour) { // due; the next period is an hour
		t.Fatal("not due after the period passed")
	}
	if yieldDue(period) {
		t.Fatal("due again right after a yield")
	}
}
