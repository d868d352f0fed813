package state

import (
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"
)

// fillTable adds n revisions, as Envoy's per-route configuration hook
// does at start (one per revision route).
func fillTable(t testing.TB, tb *Table, n int) {
	t.Helper()
	for i := range n {
		if tb.Revision(fmt.Sprintf("default/r%d", i)) == nil {
			t.Fatalf("revision %d refused", i)
		}
	}
}

// TestTableRevisionInsertCost: adding a revision to a table of 20,000
// allocates about what adding one to an empty table does, not a copy of
// the table (that made Envoy's start with N module routes O(N²)). Bytes
// allocated, not time: the figure does not move with the machine's load.
func TestTableRevisionInsertCost(t *testing.T) {
	addBytes := func(tb *Table, key string) uint64 {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		if tb.Revision(key) == nil {
			t.Fatalf("%s refused", key)
		}
		runtime.ReadMemStats(&after)
		return after.TotalAlloc - before.TotalAlloc
	}
	small := NewTable(time.Second, 10)
	big := NewTable(time.Second, 10)
	fillTable(t, big, 20_000)
	// The smallest of a few tries: another goroutine's allocation must
	// not fail the test.
	minOf := func(tb *Table, prefix string) uint64 {
		m := ^uint64(0)
		for i := range 5 {
			m = min(m, addBytes(tb, fmt.Sprintf("%s/x%d", prefix, i)))
		}
		return m
	}
	s, b := minOf(small, "small"), minOf(big, "big")
	// A copy of 20,000 entries is several hundred KiB; one revision is
	// a few KiB.
	if b > 64<<10 || b > 8*s+16<<10 {
		t.Fatalf("adding a revision to a table of 20,000 allocated %d B (empty table: %d B): the table is copied per insert", b, s)
	}
	if got := big.Lookup("default/r19999"); got == nil || got.Key != "default/r19999" {
		t.Fatalf("Lookup after fill = %v", got)
	}
}

// TestTableRevisionConcurrent: concurrent adders of the same keys get
// one *Revision per key, and Counts sees every key once.
func TestTableRevisionConcurrent(t *testing.T) {
	tb := NewTable(time.Second, 10)
	const n, workers = 500, 4
	got := make([][]*Revision, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range n {
				got[w] = append(got[w], tb.Revision(fmt.Sprintf("ns/r%d", i)))
			}
		}()
	}
	wg.Wait()
	for w := 1; w < workers; w++ {
		for i := range n {
			if got[w][i] != got[0][i] || got[0][i] == nil {
				t.Fatalf("worker %d key %d: %p, worker 0: %p", w, i, got[w][i], got[0][i])
			}
		}
	}
	seen := map[string]int{}
	tb.Counts(func(k string, _, _ int64) { seen[k]++ })
	if len(seen) != n {
		t.Fatalf("Counts saw %d keys, want %d", len(seen), n)
	}
	for k, c := range seen {
		if c != 1 {
			t.Fatalf("Counts saw %s %d times", k, c)
		}
	}
}

// BenchmarkTableFill10k: a module start with 10,000 revision routes
// (the per-route hook's table insert, once per route).
func BenchmarkTableFill10k(b *testing.B) {
	for b.Loop() {
		fillTable(b, NewTable(time.Second, 10), 10_000)
	}
}
