package modsvc

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/thaw-dev/thaw/module/state"
	"github.com/thaw-dev/thaw/revision"
)

func TestFleetShares(t *testing.T) {
	var f fleet
	if n, i := f.share("a"); n != 1 || i != 0 {
		t.Fatalf("empty fleet: %d %d", n, i)
	}
	ch := f.changed()
	leaveB, err := f.join("b")
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-ch:
	default:
		t.Fatal("join did not signal a change")
	}
	leaveA, _ := f.join("a")
	leaveB2, _ := f.join("b") // b reconnects before its old stream ended
	if n, i := f.share("b"); n != 2 || i != 1 {
		t.Fatalf("share(b) = %d, %d; want 2 Envoys, index 1", n, i)
	}
	leaveB()
	leaveB() // idempotent
	if n, _ := f.share("a"); n != 2 {
		t.Fatalf("b left with a stream still open: %d Envoys, want 2", n)
	}
	leaveB2()
	if n, i := f.share("a"); n != 1 || i != 0 {
		t.Fatalf("after b left: %d %d", n, i)
	}
	leaveA()
	for i := range MaxNodes {
		if _, err := f.join(fmt.Sprint(i)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := f.join("one-more"); !errors.Is(err, ErrTooManyNodes) {
		t.Fatalf("join past MaxNodes: %v", err)
	}
	if _, err := f.join("0"); err != nil {
		t.Fatalf("a known node refused at the bound: %v", err)
	}
}

// TestServerSplitsAmongStreams: with Envoys nil, a backend's container
// concurrency is split among the nodes with a state stream open, and
// re-split when one joins or leaves; a stream without node is refused.
func TestServerSplitsAmongStreams(t *testing.T) {
	reg, k := testRegistry(t, 4)
	reg.SetBackends(k, []revision.Backend{{Address: "127.0.0.1", Port: 81, Ready: true}})
	srv := httptest.NewServer(&Server{Registry: reg})
	defer srv.Close()

	open := func(node string) (next func() int32, stop func()) {
		ctx, cancel := context.WithCancel(t.Context())
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+StatePath+"?node="+node, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, state.MaxMessageBytes)
		return func() int32 {
				t.Helper()
				if !sc.Scan() {
					t.Fatalf("%s: stream ended: %v", node, sc.Err())
				}
				u, err := state.DecodeUpdate(sc.Bytes())
				if err != nil || len(u.Revisions) != 1 || len(u.Revisions[0].Backends) != 1 {
					t.Fatalf("%s: update %s: %v", node, sc.Bytes(), err)
				}
				return u.Revisions[0].Backends[0].Slots
			}, func() {
				cancel()
				resp.Body.Close()
			}
	}
	nextA, stopA := open("envoy-a")
	defer stopA()
	if s := nextA(); s != 4 {
		t.Fatalf("alone: %d slots, want 4", s)
	}
	nextB, stopB := open("envoy-b")
	if a, b := nextA(), nextB(); a+b != 4 || a != 2 {
		t.Fatalf("two Envoys: %d + %d slots, want 2 + 2", a, b)
	}
	stopB()
	if s := nextA(); s != 4 {
		t.Fatalf("after envoy-b left: %d slots, want 4", s)
	}
	resp, err := http.Get(srv.URL + StatePath)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("stream without node answered %d, want 400", resp.StatusCode)
	}
}
