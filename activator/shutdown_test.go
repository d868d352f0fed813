package activator

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"
)

func TestShutdown(t *testing.T) {
	bubble(t, func(t *testing.T) {
		e := newEnv(t, Options{})
		e.upsert(demo, 1, time.Minute, 100)
		e.backends(demo, "127.0.0.1")
		synctest.Wait()
		_, rel := mustAcquire(t, e.act, demo)
		served := e.acquireAsync(context.Background(), demo)
		synctest.Wait() // served queues first
		aborted := e.acquireAsync(context.Background(), demo)
		synctest.Wait()

		start := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		shut := make(chan error, 1)
		go func() { shut <- e.act.Shutdown(ctx) }()
		synctest.Wait()
		_, _, err := e.act.Acquire(context.Background(), demo)
		wantErr(t, err, ErrShuttingDown)

		rel() // a held request still gets a freed slot during the drain
		r := <-served
		if r.err != nil {
			t.Fatalf("held request during drain: %v, want a pod", r.err)
		}
		synctest.Wait()
		select {
		case err := <-shut:
			t.Fatalf("Shutdown returned %v while a request was still held", err)
		default:
		}
		wantErr(t, (<-aborted).err, ErrShuttingDown)
		if got := time.Since(start); got != 10*time.Second {
			t.Fatalf("second held request aborted after %v, want at the 10s deadline", got)
		}
		if err := <-shut; !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Shutdown = %v, want deadline exceeded after aborting", err)
		}
		r.release()
		if err := e.act.Shutdown(context.Background()); err != nil {
			t.Fatalf("second Shutdown with nothing held = %v, want nil", err)
		}
	})
}

// Held requests of a revision without backends get ErrShuttingDown exactly
// at the shutdown deadline.
func TestShutdownAbortsHeldAtDeadline(t *testing.T) {
	bubble(t, func(t *testing.T) {
		e := newEnv(t, Options{})
		e.upsert(demo, 0, time.Minute, 100)
		synctest.Wait()
		chs := []<-chan result{e.acquireAsync(context.Background(), demo), e.acquireAsync(context.Background(), demo)}
		synctest.Wait()
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		start := time.Now()
		err := e.act.Shutdown(ctx)
		if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, ErrShuttingDown) {
			t.Fatalf("Shutdown = %v, want deadline exceeded", err)
		}
		if got := time.Since(start); got != 3*time.Second {
			t.Fatalf("Shutdown took %v, want the 3s deadline", got)
		}
		for _, ch := range chs {
			wantErr(t, (<-ch).err, ErrShuttingDown)
		}
	})
}

func TestShutdownWithNothingHeld(t *testing.T) {
	bubble(t, func(t *testing.T) {
		e := newEnv(t, Options{})
		if err := e.act.Shutdown(context.Background()); err != nil {
			t.Fatalf("Shutdown = %v, want nil", err)
		}
	})
}
