//go:build cgo

package main

import (
	"fmt"
	"testing"
	"time"

	"github.com/thaw-dev/thaw/module/state"
)

func benchRouteCfg(b *testing.B, n int) {
	bufs := make([][]byte, n)
	for i := range n {
		bufs[i] = fmt.Appendf(nil, `{"revision":"default/r%d","cluster":"rev_default_r%d"}`, i, i)
	}
	hs := make([]uintptr, n)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		t := state.NewTable(time.Second, 10)
		for i, buf := range bufs {
			h, err := newRouteCfg(t, buf)
			if err != nil {
				b.Fatal(err)
			}
			hs[i] = h
		}
		b.StopTimer()
		for _, h := range hs {
			freeRouteCfg(h)
		}
		b.StartTimer()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/route")
}

func BenchmarkRouteConfig10k(b *testing.B)  { benchRouteCfg(b, 10_000) }
func BenchmarkRouteConfig100k(b *testing.B) { benchRouteCfg(b, 100_000) }

// TestRouteCfgSlab: handles are never 0, distinct while live, resolve to
// what was stored across chunk boundaries, and are reused once freed
// (zeroed); past routeMaxCfgs live configurations the hook refuses.
func TestRouteCfgSlab(t *testing.T) {
	tb := state.NewTable(time.Second, 10)
	n := routeChunkSize + 10
	hs := make([]uintptr, n)
	seen := map[uintptr]bool{}
	for i := range n {
		h, err := newRouteCfg(tb, fmt.Appendf(nil, `{"revision":"ns/r%d","cluster":"rev_ns_r%d"}`, i, i))
		if err != nil || h == 0 || seen[h] {
			t.Fatalf("route %d: handle %d (seen before %v), %v", i, h, seen[h], err)
		}
		seen[h], hs[i] = true, h
	}
	for i, h := range hs {
		rc := routeCfgOf(h)
		if rc.rev != tb.Lookup(fmt.Sprintf("ns/r%d", i)) || rc.cluster != fmt.Sprintf("rev_ns_r%d", i) {
			t.Fatalf("handle %d resolves to %+v", h, rc)
		}
	}
	freeRouteCfg(hs[3])
	h, err := newRouteCfg(tb, []byte(`{"revision":"ns/again"}`))
	if err != nil || h != hs[3] || routeCfgOf(h).cluster != "" || routeCfgOf(h).rev.Key != "ns/again" {
		t.Fatalf("freed handle %d not reused cleanly: got %d, %+v, %v", hs[3], h, routeCfgOf(h), err)
	}
	hs[3] = h
	defer func(m uint32) { routeMaxCfgs = m }(routeMaxCfgs)
	routeMu.Lock()
	routeMaxCfgs = routeNext
	routeMu.Unlock()
	if h, err := newRouteCfg(tb, []byte(`{"revision":"ns/over"}`)); h != 0 || err == nil {
		t.Fatalf("past the bound: handle %d, %v", h, err)
	}
	for _, h := range hs {
		freeRouteCfg(h)
	}
}

// BenchmarkRouteConfigWithState100k: Envoy's start as it happens with
// thaw: the per-route hook adds 100,000 revisions while the state stream
// applies thaw's first full update of the same 100,000 (Table.Apply on
// another goroutine), both on the table's lock.
func BenchmarkRouteConfigWithState100k(b *testing.B) {
	const n = 100_000
	bufs := make([][]byte, n)
	u := &state.Update{Full: true, Revisions: make([]state.RevisionUpdate, n)}
	for i := range n {
		bufs[i] = fmt.Appendf(nil, `{"revision":"default/r%d","cluster":"rev_default_r%d"}`, i, i)
		u.Revisions[i] = state.RevisionUpdate{Key: fmt.Sprintf("default/r%d", i), QueueDepth: 10, HoldTimeoutMs: 1000}
	}
	hs := make([]uintptr, n)
	b.ReportAllocs()
	for b.Loop() {
		t := state.NewTable(time.Second, 10)
		done := make(chan error)
		go func() { done <- t.Apply(u) }()
		for i, buf := range bufs {
			h, err := newRouteCfg(t, buf)
			if err != nil {
				b.Fatal(err)
			}
			hs[i] = h
		}
		if err := <-done; err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		for _, h := range hs {
			freeRouteCfg(h)
		}
		b.StartTimer()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/route")
}
