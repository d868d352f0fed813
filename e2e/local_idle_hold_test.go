//go:build e2e

package e2e

import (
	"context"
	"strings"
	"testing"
	"time"
)

// TestLocalIdleHoldPath runs `thaw local --idle-hold-path` with real
// Envoy: revisions at zero have no cluster in Envoy (admin /clusters);
// a request for one is held on the shared hold path, wakes it, and is
// answered by its backend (a client-sent x-thaw-revision naming another
// revision changes nothing); the woken revision gets its cluster, and
// after it scales back to zero the cluster is gone again. A 10% split
// member at zero is woken by its share through the hold path, and a 0%
// member at zero never gets a cluster. With thaw killed, a request for a
// revision at zero gets 503 with Retry-After, never 500.
func TestLocalIdleHoldPath(t *testing.T) {
	f := startIdleFleet(t, append([]string{"--idle-hold-path"}, extprocArgs...), fast(nil))
	th := f.th
	f.checkNoClusterAtZero()
	if !f.hasCluster("thaw_hold") {
		t.Fatal("Envoy has no thaw_hold cluster")
	}

	// Cold start through the hold path; the client's x-thaw-revision is
	// replaced by the route's.
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Second)
	defer cancel()
	code, body, err := getSpoofed(ctx, client(30*time.Second), th, "cold.test")
	if err != nil || code != 200 || !strings.Contains(body, "hello from cold") {
		t.Fatalf("cold start through the hold path: code=%d err=%v body=%q, want cold's answer", code, err, body)
	}
	if r := statusRow(t, ctx, th, "local/other"); num(r, "ready") != 0 {
		t.Fatalf("the spoofed header woke local/other: %v", r)
	}
	waitUntil(t, "cold's cluster in Envoy", 10*time.Second, func() bool { return f.hasCluster("rev_local_cold") })

	// The split: v2 (10%) is woken by its share; v3 (0%) never.
	f.checkSplit(ctx)

	// Back to zero: the cluster goes once Envoy routes cold to the hold
	// path again.
	f.waitColdBackToZero()

	// thaw killed: a revision at zero answers 503 with Retry-After.
	th.Kill()
	kctx, kcancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer kcancel()
	code, _, hdr, err := get(kctx, client(10*time.Second), th, "other.test", "/")
	if err != nil || code != 503 || hdr.Get("Retry-After") == "" {
		t.Errorf("revision at zero with thaw down: code=%d err=%v Retry-After=%q; want 503 with Retry-After",
			code, err, hdr.Get("Retry-After"))
	}
}
