package app

import (
	"bufio"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/thaw-dev/thaw/modsvc"
	"github.com/thaw-dev/thaw/revision"
)

// TestModuleServerFollowsLeader: the module server's health path passes
// only on a ready leader (the fleet bootstrap's health check on
// thaw_module), a follower refuses state streams, and a stream ends when
// its replica stops leading (the module reconnects through Envoy, whose
// health check by then points at the new leader).
func TestModuleServerFollowsLeader(t *testing.T) {
	reg := revision.NewRegistry(revision.RegistryOptions{})
	a := &App{}
	srv := httptest.NewServer(a.leaderOnly(&modsvc.Server{Registry: reg}))
	defer srv.Close()
	code := func(path string) int {
		t.Helper()
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if c := code(modsvc.HealthPath); c != http.StatusServiceUnavailable {
		t.Fatalf("follower health: %d, want 503", c)
	}
	if c := code(modsvc.StatePath + "?node=e"); c != http.StatusServiceUnavailable {
		t.Fatalf("follower state stream: %d, want 503", c)
	}
	a.lead.set(true)
	if c := code(modsvc.HealthPath); c != http.StatusServiceUnavailable {
		t.Fatalf("leader not ready yet, health: %d, want 503", c)
	}
	a.ready.Store(true)
	if c := code(modsvc.HealthPath); c != http.StatusOK {
		t.Fatalf("ready leader health: %d, want 200", c)
	}
	resp, err := http.Get(srv.URL + modsvc.StatePath + "?node=e")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	if resp.StatusCode != http.StatusOK || !sc.Scan() {
		t.Fatalf("leader state stream: %d, first line: %v", resp.StatusCode, sc.Err())
	}
	a.lead.set(false)
	ended := make(chan bool, 1)
	go func() { ended <- !sc.Scan() }()
	select {
	case ok := <-ended:
		if !ok {
			t.Fatal("stream went on after leadership was lost")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("state stream still open 10 s after leadership was lost")
	}
	if c := code(modsvc.HealthPath); c != http.StatusServiceUnavailable {
		t.Fatalf("former leader health: %d, want 503", c)
	}
}
