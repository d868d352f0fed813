//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/thaw-dev/thaw/e2e/harness"
)

// fast keeps the suite quick: the shortest stable window Knative allows and
// a short scale-to-zero grace period.
func fast(extra map[string]string) map[string]string {
	m := map[string]string{"window": "6s", "scale-to-zero-grace-period": "1s"}
	for k, v := range extra {
		m[k] = v
	}
	return m
}

// TestLocalColdStart: a revision at 0 receives one request; it is held, a
// process starts, the response is correct. The overhead is the response
// time minus the time the backend itself took to start listening.
func TestLocalColdStart(t *testing.T) {
	const n = 5
	var revs []revisionYAML
	for i := 0; i < n; i++ {
		revs = append(revs, revisionYAML{Name: fmt.Sprintf("cold%d", i), Host: fmt.Sprintf("cold%d.test", i),
			StartupDelay: 300 * time.Millisecond, Autoscaling: fast(nil)})
	}
	th := harness.StartThaw(t, harness.ThawOptions{Config: localConfig(t, revs...)})
	c := client(30 * time.Second)
	var overheads []time.Duration
	for i := 0; i < n; i++ {
		host := fmt.Sprintf("cold%d.test", i)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		start := time.Now()
		code, body, _, err := get(ctx, c, th, host, "/")
		end := time.Now()
		if err != nil || code != 200 || !strings.Contains(body, fmt.Sprintf("hello from cold%d", i)) {
			cancel()
			t.Fatalf("cold request %s: code=%d err=%v body=%q", host, code, err, body)
		}
		st, err := fetchWorkloadStats(ctx, c, th, host)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		listening := time.Unix(0, st.Listening)
		if listening.Before(start) || listening.After(end) {
			t.Fatalf("%s: backend started listening at %v, outside the request [%v, %v]: the request was not held for a cold start", host, listening, start, end)
		}
		overheads = append(overheads, end.Sub(listening))
		t.Logf("%s: total %v, backend start %v, overhead %v", host, end.Sub(start), listening.Sub(time.Unix(0, st.Started)), end.Sub(listening))
	}
	sort.Slice(overheads, func(i, j int) bool { return overheads[i] < overheads[j] })
	t.Logf("cold-start overhead over %d runs: p50 %v, max %v", n, overheads[n/2], overheads[n-1])
}

// TestLocalBurstFromZero: 1000 concurrent requests to a revision at 0 all
// succeed, and the decider goes into panic mode and raises desired scale to
// its maximum. Each process takes 10 requests at once (container
// concurrency) for 2 s each, so the burst is held long enough to be seen.
func TestLocalBurstFromZero(t *testing.T) {
	th := harness.StartThaw(t, harness.ThawOptions{Config: localConfig(t, revisionYAML{
		Name: "burst", Host: "burst.test", StartupDelay: 200 * time.Millisecond, Latency: 2 * time.Second,
		Autoscaling: fast(map[string]string{"target": "10", "container-concurrency": "10", "max-scale": "20"}),
	})})
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	start := time.Now()
	type result struct {
		ok    int
		fails []string
	}
	done := make(chan result, 1)
	go func() {
		ok, fails := burst(ctx, client(60*time.Second), th, "burst.test", "hello from burst", 1000)
		done <- result{ok, fails}
	}()
	row := waitStatus(t, th, "local/burst", 30*time.Second, "panic mode at max scale", func(r map[string]any) bool {
		return r["inPanic"] == true && num(r, "desired") == 20
	})
	t.Logf("panic mode, desired %v, after %v", row["desired"], time.Since(start))
	res := <-done
	t.Logf("burst: %d/1000 ok in %v", res.ok, time.Since(start))
	if res.ok != 1000 {
		t.Fatalf("%d of 1000 requests failed: %v", 1000-res.ok, res.fails)
	}
}

// TestLocalSteadyLoadAndScaleToZero: 50 concurrent slow requests with
// target 10 at 70% utilization settle at ceil(50/7) = 8 processes (±1) in
// serve mode; when the load stops the revision goes to proxy mode and then
// to zero processes, with no failed request; a new request wakes it again.
func TestLocalSteadyLoadAndScaleToZero(t *testing.T) {
	th := harness.StartThaw(t, harness.ThawOptions{Config: localConfig(t, revisionYAML{
		Name: "steady", Host: "steady.test", StartupDelay: 100 * time.Millisecond, Latency: 200 * time.Millisecond,
		Autoscaling: fast(map[string]string{"target": "10", "target-utilization-percentage": "70", "target-burst-capacity": "0"}),
	})})
	load := startLoad(th, "steady.test", "hello from steady", 50)
	row := waitStatus(t, th, "local/steady", 90*time.Second, "7..9 ready backends in serve mode, out of panic", func(r map[string]any) bool {
		ready := num(r, "ready")
		return r["mode"] == "serve" && ready >= 7 && ready <= 9 && r["inPanic"] == false
	})
	t.Logf("steady state: %v", row)
	// It stays there.
	time.Sleep(4 * time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	rows, err := th.Status(ctx)
	cancel()
	if err != nil {
		t.Fatal(err)
	}
	if r := rows["local/steady"]; num(r, "ready") < 7 || num(r, "ready") > 9 {
		t.Errorf("steady state drifted: %v", r)
	}
	ok, failed, fails := load.stop()
	t.Logf("steady load: %d ok, %d failed", ok, failed)
	if failed != 0 {
		t.Fatalf("%d requests failed under steady load: %v", failed, fails)
	}

	waitStatus(t, th, "local/steady", 60*time.Second, "proxy mode with no backends", func(r map[string]any) bool {
		return r["mode"] == "proxy" && num(r, "ready") == 0 && num(r, "desired") == 0
	})
	c := client(30 * time.Second)
	ctx, cancel = context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	code, body, _, err := get(ctx, c, th, "steady.test", "/")
	if err != nil || code != 200 || !strings.Contains(body, "hello from steady") {
		t.Fatalf("wake after scale to zero: code=%d err=%v body=%q", code, err, body)
	}
}

// TestLocalChurn: 20 cycles of idle, burst, idle with no failed request.
// Long idles let the revision reach zero between some bursts.
func TestLocalChurn(t *testing.T) {
	th := harness.StartThaw(t, harness.ThawOptions{Config: localConfig(t, revisionYAML{
		Name: "churn", Host: "churn.test", StartupDelay: 50 * time.Millisecond, Latency: 20 * time.Millisecond,
		Autoscaling: fast(map[string]string{"target": "5"}),
	})})
	c := client(30 * time.Second)
	for i := 0; i < 20; i++ {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		ok, fails := burst(ctx, c, th, "churn.test", "hello from churn", 30)
		cancel()
		if ok != 30 {
			t.Fatalf("cycle %d: %d of 30 failed: %v", i, 30-ok, fails)
		}
		idle := 300 * time.Millisecond
		if i%4 == 3 {
			idle = 9 * time.Second // past the stable window and grace: may reach zero
		}
		time.Sleep(idle)
	}
}

// TestLocalBadInput: one invalid revision does not stop the others; it is
// reported with the field; an unknown host gets 404; /status and thaw
// status answer one revision's row when asked (checkStatusFilter).
func TestLocalBadInput(t *testing.T) {
	th := harness.StartThaw(t, harness.ThawOptions{Config: localConfig(t,
		revisionYAML{Name: "good", Host: "good.test", Autoscaling: fast(nil)},
		revisionYAML{Name: "bad", Host: "bad.test", Autoscaling: fast(map[string]string{"target-utilization-percentage": "250"})},
	)})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rows, err := th.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	bad := rows["local/bad"]
	if bad == nil || bad["mode"] != "invalid" || !strings.Contains(fmt.Sprint(bad["error"]), "target-utilization-percentage") {
		t.Errorf("invalid revision status = %v, want mode invalid naming target-utilization-percentage", bad)
	}
	if !strings.Contains(th.Log(), "target-utilization-percentage") {
		t.Errorf("thaw log does not report the invalid field")
	}
	c := client(30 * time.Second)
	code, body, _, err := get(ctx, c, th, "good.test", "/")
	if err != nil || code != 200 || !strings.Contains(body, "hello from good") {
		t.Errorf("valid revision: code=%d err=%v body=%q", code, err, body)
	}
	for _, host := range []string{"bad.test", "unknown.test"} {
		code, _, _, err = get(ctx, c, th, host, "/")
		if err != nil || code != 404 {
			t.Errorf("host %s: code=%d err=%v, want 404", host, code, err)
		}
	}
	checkStatusFilter(ctx, t, th)
}
