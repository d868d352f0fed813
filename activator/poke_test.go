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
		time.Sleep(DefaultPokeInterval)
		e.acquireAsync(context.Background(), demo)
		synctest.Wait()
		if n := e.poker.count(); n != 2 {
			t.Fatalf("pokes one poke interval later = %d, want 2 (repeat while still cold)", n)
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
