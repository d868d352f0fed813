package modsvc

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

type heldLimitCounter struct{ n atomic.Int64 }

func (c *heldLimitCounter) CountHeldLimit(n int64) { c.n.Add(n) }

// TestHeldBoundSentAndCounted: every update carries Server.MaxHeld (the
// Envoy's open-file budget for held requests), and the refusals a module
// reports at that bound reach the held_limit counter.
func TestHeldBoundSentAndCounted(t *testing.T) {
	reg, _ := testRegistry(t, 0)
	c := &heldLimitCounter{}
	srv := httptest.NewServer(&Server{Registry: reg, MaxHeld: func() int { return 784 }, HeldLimitCounter: c})
	defer srv.Close()

	resp, err := http.Get(srv.URL + StatePath + "?node=n1")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	u := updateReader(t, resp.Body)()
	if !u.Full || u.MaxHeld != 784 {
		t.Fatalf("update full %v maxHeld %d, want a full update with maxHeld 784", u.Full, u.MaxHeld)
	}

	r, err := http.Post(srv.URL+ReportPath, "application/json", strings.NewReader(`{"node":"n1","heldLimit":5}`))
	if err != nil {
		t.Fatal(err)
	}
	r.Body.Close()
	if r.StatusCode != http.StatusNoContent || c.n.Load() != 5 {
		t.Fatalf("report answered %d, counted %d; want 204 and 5", r.StatusCode, c.n.Load())
	}
}
