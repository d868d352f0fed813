package state

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"
)

// reporter is the module's reporter's memory (module/activator conn.go).
type reporter struct{ active map[string]bool }

// walk runs one report (ReportCounts, then WakeCounts) and returns the
// counts by key.
func (rp *reporter) walk(tb *Table) (map[string][2]int64, []WakeCount) {
	if rp.active == nil {
		rp.active = map[string]bool{}
	}
	got := map[string][2]int64{}
	for _, c := range tb.ReportCounts(rp.active, nil) {
		if _, dup := got[c.Key]; dup {
			panic("revision reported twice in one walk: " + c.Key)
		}
		got[c.Key] = [2]int64{c.Held, c.InFlight}
	}
	return got, tb.WakeCounts()
}

// listed returns how many revisions the reporter's list holds.
func listed(tb *Table) int {
	tb.report.mu.Lock()
	defer tb.report.mu.Unlock()
	n := len(tb.report.reporting)
	for r := tb.report.pushed.Load(); r != nil; r = r.report.next {
		n++
	}
	return n
}

// TestReportWalkVisitsActiveOnly: an idle table lists nothing; a revision
// is listed and reported while it holds or has requests in flight, once
// more with zeros, then unlisted; wake answers are reported once and
// their revision unlisted after.
func TestReportWalkVisitsActiveOnly(t *testing.T) {
	tb := NewTable(time.Minute, 10)
	fillTable(t, tb, 1000)
	if err := tb.Apply(update("default/r7", 10, time.Minute, BackendUpdate{Addr: "127.0.0.1:1", Slots: 1})); err != nil {
		t.Fatal(err)
	}
	var rp reporter
	if got, _ := rp.walk(tb); len(got) != 0 || listed(tb) != 0 {
		t.Fatalf("idle table: walk reported %v, %d listed", got, listed(tb))
	}
	r := tb.Lookup("default/r7")
	b := r.Acquire()
	w, err := r.Hold(func(*Waiter) {})
	if b == nil || err != nil {
		t.Fatalf("Acquire %v, Hold %v", b, err)
	}
	for _, step := range []struct {
		do   func()
		want map[string][2]int64
	}{
		{func() {}, map[string][2]int64{"default/r7": {1, 1}}},
		{func() {}, map[string][2]int64{"default/r7": {1, 1}}},
		{func() { r.Release(b) }, map[string][2]int64{"default/r7": {0, 1}}}, // granted to w
		{func() { r.Release(w.Backend()) }, map[string][2]int64{"default/r7": {0, 0}}},
		{func() {}, map[string][2]int64{}},
	} {
		step.do()
		if got, _ := rp.walk(tb); fmt.Sprint(got) != fmt.Sprint(step.want) {
			t.Fatalf("walk = %v, want %v", got, step.want)
		}
	}
	if n := listed(tb); n != 0 {
		t.Fatalf("idle again: %d revisions still listed", n)
	}

	// A wake answer lists an idle revision for its count.
	if err := tb.Apply(wakeUpdate("default/r9", holderJSON(t, testPolicy))); err != nil {
		t.Fatal(err)
	}
	r9 := tb.Lookup("default/r9")
	r9.WakeAnswer(req("GET", "/healthz", map[string]string{"user-agent": "kube-probe/1.37"}))
	got, wakes := rp.walk(tb)
	if len(got) != 0 || len(wakes) != 1 || wakes[0] != (WakeCount{Key: "default/r9", Rule: "probe", Count: 1}) {
		t.Fatalf("after a wake answer: counts %v, wakes %+v", got, wakes)
	}
	if got, wakes := rp.walk(tb); len(got) != 0 || len(wakes) != 0 {
		t.Fatalf("wake answer reported twice: %v %v", got, wakes)
	}
	if n := listed(tb); n != 0 {
		t.Fatalf("after its wake answer was reported: %d revisions still listed", n)
	}
}

// TestReportWalkWhileRequestsRun: with requests starting and ending on
// many revisions while the reporter walks (run with -race), every
// revision with a request in flight when a walk starts is visited by it,
// none twice, and once all requests end two walks empty the list.
func TestReportWalkWhileRequestsRun(t *testing.T) {
	tb := NewTable(time.Minute, 10)
	const revs, workers = 64, 4
	for i := range revs {
		if err := tb.Apply(update(fmt.Sprintf("ns/r%d", i), 10, time.Minute, BackendUpdate{Addr: "127.0.0.1:1", Slots: 0})); err != nil {
			t.Fatal(err)
		}
	}
	// pinned: one request per worker held open on a known revision while
	// the checker walks.
	var (
		mu     sync.Mutex
		pinned = map[string]int{}
		stop   = make(chan struct{})
		wg     sync.WaitGroup
	)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 1))
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				r := tb.Lookup(fmt.Sprintf("ns/r%d", rng.IntN(revs)))
				b := r.Acquire()
				if b == nil {
					t.Error("unlimited backend refused a request")
					return
				}
				if i%16 == 0 {
					mu.Lock()
					pinned[r.Key]++
					mu.Unlock()
					time.Sleep(50 * time.Microsecond)
					mu.Lock()
					pinned[r.Key]--
					mu.Unlock()
				}
				r.Release(b)
			}
		}()
	}
	var rp reporter
	deadline := time.Now().Add(2 * time.Second)
	for walks := 0; walks < 2000 && time.Now().Before(deadline); walks++ {
		mu.Lock()
		var must []string
		for k, n := range pinned {
			if n > 0 {
				must = append(must, k)
			}
		}
		got, _ := rp.walk(tb) // under mu: the pinned requests stay in flight
		mu.Unlock()
		for _, k := range must {
			if _, ok := got[k]; !ok {
				t.Fatalf("walk %d missed %s, which had a request in flight", walks, k)
			}
		}
	}
	close(stop)
	wg.Wait()
	rp.walk(tb)
	if got, _ := rp.walk(tb); len(got) != 0 || listed(tb) != 0 {
		t.Fatalf("all requests ended: the second walk still reported %v, %d listed", got, listed(tb))
	}
}
