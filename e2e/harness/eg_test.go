package harness

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestEGEnvoyAdmin(t *testing.T) {
	run := t.TempDir()
	if _, err := EGEnvoyAdmin(run); err == nil {
		t.Fatal("no run yet: no error")
	}
	write := func(sub, addr string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Join(run, sub), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(run, sub, "admin-address.txt"), []byte(addr), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("1000", "")
	if _, err := EGEnvoyAdmin(run); err == nil {
		t.Fatal("empty admin-address.txt: no error")
	}
	write("1000", "127.0.0.1:19000\n")
	write("2000", "127.0.0.1:19001\n")
	if got, err := EGEnvoyAdmin(run); err != nil || got != "http://127.0.0.1:19001" {
		t.Fatalf("EGEnvoyAdmin = %q, %v; want the last run's http://127.0.0.1:19001", got, err)
	}
}

// TestEGSplitRoute: the rendered RevisionSplit lists every member (the
// tag only where set) and its HTTPRoute names the split on the host.
func TestEGSplitRoute(t *testing.T) {
	got := EGSplitRoute("shop", "shop.test", EGSplitMember{RevisionName: "v1", Percent: 90}, EGSplitMember{RevisionName: "v2", Percent: 10, Tag: "canary"})
	for _, want := range []string{
		"kind: RevisionSplit\nmetadata: {name: shop, namespace: local}\nspec:\n  traffic:\n" +
			"  - {revisionName: v1, percent: 90}\n  - {revisionName: v2, percent: 10, tag: canary}\n",
		"kind: HTTPRoute\nmetadata: {name: shop, namespace: local}",
		"hostnames: [shop.test]",
		"backendRefs: [{group: thaw.dev, kind: RevisionSplit, name: shop}]",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("EGSplitRoute lacks %q:\n%s", want, got)
		}
	}
}

// TestWaitRoute: WaitRoute retries until the host answers 200 with the
// wanted body, and gives up with the last answer when ctx ends.
func TestWaitRoute(t *testing.T) {
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Host != "a.test" || n.Add(1) < 3 {
			http.Error(w, "no route", http.StatusNotFound)
			return
		}
		fmt.Fprint(w, "hello from a")
	}))
	defer srv.Close()
	c := &http.Client{Timeout: 5 * time.Second}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	body, err := WaitRoute(ctx, c, RouteWait{URL: srv.URL, Host: "a.test", Want: "hello", Every: time.Millisecond})
	if err != nil || body != "hello from a" || n.Load() != 3 {
		t.Fatalf("WaitRoute = %q, %v after %d requests; want the body after 3", body, err, n.Load())
	}
	short, cancel2 := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel2()
	if _, err := WaitRoute(short, c, RouteWait{URL: srv.URL, Host: "b.test", Every: time.Millisecond}); err == nil ||
		!strings.Contains(err.Error(), "404") || !strings.Contains(err.Error(), "b.test") {
		t.Errorf("WaitRoute for a host without route = %v, want an error naming the host and the last 404", err)
	}
}
