//go:build e2e

package e2e

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/thaw-dev/thaw/e2e/harness"
)

// TestLocalSIGTERMDrainsEnvoy: SIGTERM of `thaw local` under warm load
// (serve mode, 300 ms per request) first drains Envoy's listener, then
// stops the backends: every request that started before the signal gets
// its 200, and a request started after it is either served or refused
// (connection refused), never reset half-way.
func TestLocalSIGTERMDrainsEnvoy(t *testing.T) { testLocalSIGTERM(t, extprocArgs, 0) }

// TestLocalModuleSIGTERMDrainsHeld is TestLocalSIGTERMDrainsEnvoy with the
// activator module, and with 300 requests held in Envoy for a revision at
// zero (its backend starts in 1 s) when SIGTERM arrives: Envoy's drain
// waits for them (they are active requests of its listener) while thaw
// still runs, so the revision wakes and every held request gets its 200.
func TestLocalModuleSIGTERMDrainsHeld(t *testing.T) { testLocalSIGTERM(t, moduleArgs(t), 300) }

// testLocalSIGTERM runs the SIGTERM test with thaw's extra args; held > 0
// also holds that many requests at zero when the signal is sent.
func testLocalSIGTERM(t *testing.T, args []string, held int) {
	cfg := localConfig(t, revisionYAML{Name: "warm", Host: "warm.test", StartupDelay: 100 * time.Millisecond,
		Latency: 300 * time.Millisecond, Autoscaling: fast(map[string]string{"min-scale": "2", "target-burst-capacity": "0"})},
		revisionYAML{Name: "cold", Host: "cold.test", StartupDelay: time.Second, Latency: 20 * time.Millisecond,
			Autoscaling: fast(map[string]string{"max-scale": "1", "hold-timeout": "30s"})})
	th := harness.StartThaw(t, harness.ThawOptions{Config: cfg, Args: args})
	waitStatus(t, th, "local/warm", 60*time.Second, "serve mode with 2 ready backends", func(r map[string]any) bool {
		return r["mode"] == "serve" && num(r, "ready") >= 2
	})

	type result struct {
		start time.Time
		code  int
		err   error
	}
	var (
		mu      sync.Mutex
		results []result
		wg      sync.WaitGroup
	)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c := client(30 * time.Second)
	stop := make(chan struct{})
	for range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 1000 {
				select {
				case <-stop:
					return
				default:
				}
				start := time.Now()
				code, body, _, err := get(ctx, c, th, "warm.test", "/")
				if err == nil && code == 200 && !strings.Contains(body, "hello from warm") {
					err = fmt.Errorf("unexpected body %.60q", body)
				}
				mu.Lock()
				results = append(results, result{start, code, err})
				mu.Unlock()
				if err != nil {
					time.Sleep(20 * time.Millisecond)
				}
			}
		}()
	}
	time.Sleep(1500 * time.Millisecond)
	var burst chan []burstOutcome
	if held > 0 {
		burst = make(chan []burstOutcome, 1)
		go func() { burst <- burstAll(th, "cold.test", held, 45*time.Second) }()
		deadline := time.Now().Add(20 * time.Second)
		for envoyStat(t, th, "http.thaw_http.downstream_rq_active") < held {
			if time.Now().After(deadline) {
				t.Fatalf("never %d requests active in Envoy", held)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	signalled := time.Now()
	if err := th.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-th.Exited():
	case <-time.After(45 * time.Second):
		t.Fatalf("thaw did not exit within 45 s of SIGTERM\n%s", th.Log())
	}
	exited := time.Now()
	close(stop)
	wg.Wait()

	var before, beforeOK, after, afterOK, refused int
	var bad []string
	for _, r := range results {
		// After SIGTERM Envoy's listener is closed: a new connection is
		// refused, or reset when the kernel had already queued it in the
		// listen backlog when the socket closed (no request of it reached
		// Envoy). Both are refusals; a request started before SIGTERM
		// must succeed.
		refusedErr := r.err != nil && (errors.Is(r.err, syscall.ECONNREFUSED) || errors.Is(r.err, syscall.ECONNRESET))
		ok := r.err == nil && r.code == 200
		switch {
		case r.start.Before(signalled):
			before++
			if ok {
				beforeOK++
			}
		default:
			after++
			if ok {
				afterOK++
			}
			if refusedErr {
				refused++
			}
		}
		if !ok && !(refusedErr && !r.start.Before(signalled)) && len(bad) < 10 {
			bad = append(bad, fmt.Sprintf("+%v code=%d err=%v", r.start.Sub(signalled).Round(time.Millisecond), r.code, r.err))
		}
	}
	t.Logf("SIGTERM: thaw exited after %v; %d/%d requests started before it ok; after it: %d ok, %d refused of %d",
		exited.Sub(signalled).Round(time.Millisecond), beforeOK, before, afterOK, refused, after)
	if before == 0 || beforeOK != before {
		t.Errorf("%d of %d requests in flight at SIGTERM failed", before-beforeOK, before)
	}
	if len(bad) > 0 {
		t.Errorf("requests reset or failed (not refused) around SIGTERM: %v", bad)
	}
	if err := th.ExitErr(); err != nil {
		t.Errorf("thaw exit: %v", err)
	}
	if held > 0 {
		res := <-burst
		ok := 0
		var fails []string
		for _, r := range res {
			if r.err == nil && r.code == 200 && strings.Contains(r.body, "hello from cold") {
				ok++
			} else if len(fails) < 10 {
				fails = append(fails, fmt.Sprintf("code=%d err=%v body=%.80q", r.code, r.err, r.body))
			}
		}
		t.Logf("held at zero when SIGTERM arrived: %d/%d served (%s)", ok, held, tookQuantiles(res))
		if ok != held {
			t.Errorf("%d of %d requests held at SIGTERM failed: %v", held-ok, held, fails)
		}
	}
}
