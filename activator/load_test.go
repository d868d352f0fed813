package activator

import (
	"maps"
	"testing"
	"testing/synctest"
	"time"

	"github.com/thaw-dev/thaw/revision"
)

// TestBackendInFlight: the per-backend count follows acquisitions and
// releases; an unknown revision has none.
func TestBackendInFlight(t *testing.T) {
	bubble(t, func(t *testing.T) {
		e := newEnv(t, Options{})
		e.upsert(demo, 1, time.Minute, 100)
		e.backends(demo, "127.0.0.1", "127.0.0.2")
		synctest.Wait()
		// Container concurrency 1: one request per backend.
		var rels []func()
		for range 2 {
			_, rel := mustAcquire(t, e.act, demo)
			rels = append(rels, rel)
		}
		want := map[string]int{"127.0.0.1:8080": 1, "127.0.0.2:8080": 1}
		if got := e.act.BackendInFlight(demo); !maps.Equal(got, want) {
			t.Errorf("BackendInFlight = %v, want %v", got, want)
		}
		rels[0]()
		synctest.Wait()
		if got := e.act.BackendInFlight(demo); len(got) != 1 {
			t.Errorf("after one release: %v, want one backend busy", got)
		}
		rels[1]()
		synctest.Wait()
		if got := e.act.BackendInFlight(demo); len(got) != 0 {
			t.Errorf("after both releases: %v, want none", got)
		}
		if got := e.act.BackendInFlight(revision.Key{Namespace: "x", Name: "unknown"}); len(got) != 0 {
			t.Errorf("unknown revision: %v", got)
		}
	})
}
