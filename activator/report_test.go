package activator

import (
	"context"
	"testing"
	"testing/synctest"
	"time"
)

func TestPokeOnFirstHeldRequest(t *testing.T) {
	bubble(t, func(t *testing.T) {
		e := newEnv(t, Options{})
		e.upsert(demo, 0, time.Minute, 100)
		synctest.Wait()
		for i := 0; i < 20; i++ {
			e.acquireAsync(context.Background(), demo)
		}
		synctest.Wait()
		if n := e.poker.count(); n != 1 {
			t.Fatalf("pokes after 20 held requests = %d, want 1", n)
		}
		time.Sleep(DefaultReportInterval)
		e.acquireAsync(context.Background(), demo)
		synctest.Wait()
		if n := e.poker.count(); n != 2 {
			t.Fatalf("pokes one report interval later = %d, want 2 (repeat while still cold)", n)
		}
		e.backends(demo, "127.0.0.1")
		synctest.Wait()
		_, rel := mustAcquire(t, e.act, demo)
		rel()
		if n := e.poker.count(); n != 2 {
			t.Fatalf("pokes after a warm request = %d, want still 2", n)
		}
	})
}

func TestReportsSamples(t *testing.T) {
	bubble(t, func(t *testing.T) {
		e := newEnv(t, Options{})
		e.upsert(demo, 1, time.Minute, 100)
		e.backends(demo, "127.0.0.1")
		synctest.Wait()
		_, rel := mustAcquire(t, e.act, demo)
		e.acquireAsync(context.Background(), demo) // held
		e.acquireAsync(context.Background(), demo) // held
		time.Sleep(DefaultReportInterval)
		synctest.Wait()
		s := e.rec.all()
		if len(s) != 1 {
			t.Fatalf("samples after one interval = %+v, want 1", s)
		}
		if s[0].Revision != demo || s[0].Source != SampleSource || s[0].Concurrency != 3 || s[0].Requests != 3 {
			t.Fatalf("sample = %+v, want demo/activator concurrency 3 (1 in flight + 2 held), 3 requests", s[0])
		}
		rel()
		time.Sleep(DefaultReportInterval)
		synctest.Wait()
		if s := e.rec.all(); len(s) != 2 || s[1].Concurrency != 2 || s[1].Requests != 0 {
			t.Fatalf("second sample = %+v, want concurrency 2, requests 0", s[len(s)-1])
		}
	})
}

// Idle revisions are reported once with zero, then skipped.
func TestReportsSkipIdle(t *testing.T) {
	bubble(t, func(t *testing.T) {
		e := newEnv(t, Options{})
		e.upsert(demo, 0, time.Minute, 100)
		e.backends(demo, "127.0.0.1")
		synctest.Wait()
		_, rel := mustAcquire(t, e.act, demo)
		rel()
		time.Sleep(5 * DefaultReportInterval)
		synctest.Wait()
		s := e.rec.all()
		if len(s) != 2 || s[0].Requests != 1 || s[1].Requests != 0 || s[1].Concurrency != 0 {
			t.Fatalf("samples = %+v, want one with 1 request then one zero", s)
		}
	})
}
