package local

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
	"k8s.io/utils/clock"

	"github.com/thaw-dev/thaw/revision"
)

// fakeAdmin is a LoadSource standing in for Envoy's admin: each call
// records the revisions it names and how many calls overlap; it answers
// after delay, or, when stopped, only when its context ends (a SIGSTOPped
// Envoy).
type fakeAdmin struct {
	delay   time.Duration
	stopped bool

	mu                  sync.Mutex
	calls               [][]revision.Key
	inflight, maxFlight int
	deadlines           []time.Duration // each call's context deadline, from its start
}

func (f *fakeAdmin) Load(ctx context.Context, keys ...revision.Key) (map[string]BackendLoad, error) {
	f.mu.Lock()
	f.calls = append(f.calls, keys)
	f.inflight++
	f.maxFlight = max(f.maxFlight, f.inflight)
	if dl, ok := ctx.Deadline(); ok {
		f.deadlines = append(f.deadlines, time.Until(dl))
	}
	stopped := f.stopped
	f.mu.Unlock()
	defer func() { f.mu.Lock(); f.inflight--; f.mu.Unlock() }()
	if stopped {
		<-ctx.Done()
		return nil, fmt.Errorf("envoy admin clusters: %w", ctx.Err())
	}
	select {
	case <-time.After(f.delay):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	out := map[string]BackendLoad{}
	for _, k := range keys {
		out[k.Name+":1"] = BackendLoad{Requests: 1}
	}
	return out, nil
}

func drainKeys(n int) []revision.Key {
	keys := make([]revision.Key, n)
	for i := range keys {
		keys[i] = revision.Key{Namespace: "local", Name: fmt.Sprintf("r%d", i)}
	}
	return keys
}

// TestDrainLoadsOneReadForAll: instances of many revisions draining at
// once poll Envoy's load; they share reads: never two at a time, each
// naming every draining revision (at most maxLoadKeysPerRead), and a
// read is reused by the polls within drainPoll of its start.
func TestDrainLoadsOneReadForAll(t *testing.T) {
	for _, tc := range []struct {
		name      string
		revisions int
		wantCalls int // for one poll of every instance
	}{
		{name: "one revision", revisions: 1, wantCalls: 1},
		{name: "forty revisions", revisions: 40, wantCalls: 1},
		{name: "more than one read names", revisions: maxLoadKeysPerRead + 36, wantCalls: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				admin := &fakeAdmin{delay: 30 * time.Millisecond}
				d := newDrainLoads(admin, clock.RealClock{}, zap.NewNop())
				keys := drainKeys(tc.revisions)
				for _, k := range keys {
					defer d.watch(k)()
				}
				var wg sync.WaitGroup
				errs := make(chan error, len(keys))
				for _, k := range keys {
					wg.Go(func() {
						loads, err := d.get(context.Background(), k)
						if err == nil && loads[k.Name+":1"].Requests != 1 {
							err = fmt.Errorf("%s: loads %v lack its backend", k, loads)
						}
						errs <- err
					})
				}
				wg.Wait()
				close(errs)
				for err := range errs {
					if err != nil {
						t.Error(err)
					}
				}
				if len(admin.calls) != tc.wantCalls || admin.maxFlight != 1 {
					t.Errorf("%d reads, at most %d at a time; want %d, 1", len(admin.calls), admin.maxFlight, tc.wantCalls)
				}
				for _, c := range admin.calls {
					if len(c) > maxLoadKeysPerRead {
						t.Errorf("a read named %d revisions, want at most %d", len(c), maxLoadKeysPerRead)
					}
				}
				// Within drainPoll of the read's start a poll reuses it.
				calls := len(admin.calls)
				if _, err := d.get(context.Background(), keys[0]); err != nil || len(admin.calls) != calls {
					t.Errorf("poll right after: %v, %d reads; want the last reused", err, len(admin.calls)-calls)
				}
				time.Sleep(drainPoll)
				if _, err := d.get(context.Background(), keys[0]); err != nil || len(admin.calls) != calls+1 {
					t.Errorf("poll after drainPoll: %v, %d reads; want one new", err, len(admin.calls)-calls)
				}
			})
		})
	}
}

// TestDrainLoadsStoppedEnvoy: with Envoy's admin not answering, 50
// instances draining together for 10 s cause one read at a time, each
// bounded by loadTimeout (about 10 reads, not 50 per poll); every poll
// returns by its own deadline with an error naming the read timeout; one
// Warn says so, and one Info when Envoy answers again.
func TestDrainLoadsStoppedEnvoy(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		admin := &fakeAdmin{stopped: true}
		core, logs := observer.New(zap.InfoLevel)
		d := newDrainLoads(admin, clock.RealClock{}, zap.New(core))
		keys := drainKeys(50)
		const drainFor = 10 * time.Second
		var wg sync.WaitGroup
		var mu sync.Mutex
		var late, polls int
		var lastErr error
		for _, k := range keys {
			wg.Go(func() {
				defer d.watch(k)()
				ctx, cancel := context.WithTimeout(context.Background(), drainFor)
				defer cancel()
				for ctx.Err() == nil {
					pctx, pcancel := context.WithTimeout(ctx, 300*time.Millisecond) // a caller's own bound
					start := time.Now()
					_, err := d.get(pctx, k)
					pcancel()
					mu.Lock()
					polls++
					if time.Since(start) > 300*time.Millisecond {
						late++
					}
					if err != nil {
						lastErr = err
					}
					mu.Unlock()
					time.Sleep(drainPoll)
				}
			})
		}
		wg.Wait()
		synctest.Wait()
		if admin.maxFlight != 1 {
			t.Errorf("%d reads at a time, want 1", admin.maxFlight)
		}
		if n := len(admin.calls); n < 5 || n > int(drainFor/loadTimeout)+1 {
			t.Errorf("%d reads in %s, want one per %s at most", n, drainFor, loadTimeout)
		}
		for _, dl := range admin.deadlines {
			if dl != loadTimeout {
				t.Errorf("a read's deadline was %s ahead, want loadTimeout %s", dl, loadTimeout)
			}
		}
		if late != 0 || polls < len(keys) {
			t.Errorf("%d of %d polls returned after their deadline", late, polls)
		}
		if lastErr == nil {
			t.Error("no poll saw an error")
		}
		warns := logs.FilterMessageSnippet("Envoy's load per backend unknown").All()
		if len(warns) != 1 || warns[0].ContextMap()["readTimeout"] != loadTimeout {
			t.Errorf("Warn lines %v, want one naming readTimeout %s", warns, loadTimeout)
		}

		// Envoy answers again: the next read succeeds and says so once.
		time.Sleep(loadTimeout) // the last read ends
		admin.mu.Lock()
		admin.stopped = false
		admin.mu.Unlock()
		unwatch := d.watch(keys[0])
		defer unwatch()
		if _, err := d.get(context.Background(), keys[0]); err != nil {
			t.Errorf("after Envoy resumed: %v", err)
		}
		if n := logs.FilterMessage("Envoy's load per backend readable again").Len(); n != 1 {
			t.Errorf("%d recovery lines, want 1", n)
		}
	})
}

// TestDrainLoadsReadErrorNamesTimeout: a failed read's error names the read
// timeout and wraps the source's error; a caller whose context ends
// first gets its context's error while the read goes on for others.
func TestDrainLoadsReadErrorNamesTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		admin := &fakeAdmin{stopped: true}
		d := newDrainLoads(admin, clock.RealClock{}, zap.NewNop())
		k := drainKeys(1)[0]
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		_, err := d.get(ctx, k)
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "Envoy's load per backend") {
			t.Errorf("caller's deadline first: %v", err)
		}
		_, err = d.get(context.Background(), k) // waits for the same read
		if err == nil || !strings.Contains(err.Error(), "read timeout "+loadTimeout.String()) ||
			!errors.Is(err, context.DeadlineExceeded) || len(admin.calls) != 1 {
			t.Errorf("read's own timeout: %v after %d reads; want one read, its timeout named", err, len(admin.calls))
		}
	})
}
