package state

import (
	"fmt"
	"testing"
	"time"
)

// BenchmarkReportWalk100k: what the module's reporter spends each report
// interval (1 s by default) on a table of 100,000 idle revisions:
// ReportCounts and WakeCounts walk every revision (docs/scaling.md,
// "Envoy's CPU while idle at 100,000").
func BenchmarkReportWalk100k(b *testing.B) {
	t := NewTable(time.Second, 10)
	fillTable(b, t, 100_000)
	active := map[string]bool{}
	for b.Loop() {
		if rep := t.ReportCounts(active, nil); len(rep) != 0 {
			b.Fatalf("idle table reported %d revisions", len(rep))
		}
		if len(t.WakeCounts()) != 0 {
			b.Fatal("idle table reported wake answers")
		}
	}
}

// BenchmarkReportWalkActive100k: the reporter's walk as the module runs
// it (ReportCounts, WakeCounts) on the same 100,000 revisions, 10 of them
// with a request in flight: it visits those 10, not the table.
func BenchmarkReportWalkActive100k(b *testing.B) {
	t := NewTable(time.Second, 10)
	fillTable(b, t, 100_000)
	for i := range 10 {
		k := fmt.Sprintf("default/r%d", i*9973)
		if err := t.Apply(update(k, 10, time.Minute, BackendUpdate{Addr: "127.0.0.1:1", Slots: 0})); err != nil {
			b.Fatal(err)
		}
		if t.Lookup(k).Acquire() == nil {
			b.Fatal("no slot")
		}
	}
	active := map[string]bool{}
	var n int
	for b.Loop() {
		n = len(t.ReportCounts(active, nil))
		if len(t.WakeCounts()) != 0 {
			b.Fatal("reported wake answers")
		}
	}
	if n != 10 {
		b.Fatalf("walk reported %d revisions, want the 10 active", n)
	}
}

// TestEachWhileAdding: the reporter's walk (each) sees every revision
// added before it started, each once, while Envoy's route hook keeps
// adding revisions (run with -race: the walk reads the list without the
// writer lock).
func TestEachWhileAdding(t *testing.T) {
	tb := NewTable(time.Second, 10)
	const n = 5000
	done := make(chan struct{})
	go func() {
		defer close(done)
		fillTable(t, tb, n)
	}()
	for walks := 0; walks < 10_000; walks++ {
		tb.mu.Lock()
		before := tb.n
		tb.mu.Unlock()
		seen := make(map[string]int, before)
		tb.each(func(k string, r *Revision) {
			if r.Key != k {
				t.Fatalf("revision %q visited as %q", r.Key, k)
			}
			seen[k]++
		})
		for k, c := range seen {
			if c != 1 {
				t.Fatalf("%s visited %d times in one walk", k, c)
			}
		}
		if len(seen) < before {
			t.Fatalf("walk saw %d revisions, %d were added before it", len(seen), before)
		}
		select {
		case <-done:
			if len(seen) == n {
				return
			}
		default:
		}
	}
	<-done
	if c := len(collectKeys(tb)); c != n {
		t.Fatalf("after adding %d revisions the walk sees %d", n, c)
	}
}

func collectKeys(tb *Table) []string {
	var keys []string
	tb.each(func(k string, _ *Revision) { keys = append(keys, k) })
	return keys
}
