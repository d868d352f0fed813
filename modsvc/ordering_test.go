package modsvc

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"

	"github.com/thaw-dev/thaw/module/state"
	"github.com/thaw-dev/thaw/revision"
)

// fakeConfirmer confirms a revision at the generations set by confirm.
type fakeConfirmer struct {
	mu  sync.Mutex
	gen map[revision.Key]uint64
	ch  chan struct{}
}

func newFakeConfirmer() *fakeConfirmer {
	return &fakeConfirmer{gen: map[revision.Key]uint64{}, ch: make(chan struct{})}
}

func (f *fakeConfirmer) ConfirmedBy(node string, k revision.Key, g uint64) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return node == "n1" && f.gen[k] >= g && f.gen[k] > 0
}

func (f *fakeConfirmer) Changed() <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.ch
}

// confirm marks the revision's current generation ACKed by n1.
func (f *fakeConfirmer) confirm(reg *revision.Registry, k revision.Key) {
	f.mu.Lock()
	f.gen[k] = reg.Snapshot().Get(k).Generation
	close(f.ch)
	f.ch = make(chan struct{})
	f.mu.Unlock()
}

// applyAddrs returns ns/a's backends after the module applied u to a
// state in which they were prev: a full update replaces them, an
// incremental one changes them only when it lists or removes ns/a.
func applyAddrs(prev []string, u *state.Update) []string {
	if slices.Contains(u.Removed, "ns/a") {
		prev = nil
	}
	for _, r := range u.Revisions {
		if r.Key == "ns/a" {
			return addrsOf(u)
		}
	}
	if u.Full {
		return nil
	}
	return prev
}

// addrsOf returns the backends u sends for ns/a.
func addrsOf(u *state.Update) []string {
	var out []string
	for _, r := range u.Revisions {
		if r.Key != "ns/a" {
			continue
		}
		for _, b := range r.Backends {
			out = append(out, b.Addr)
		}
	}
	return out
}

// TestBackendsWaitForACK: a backend reaches a node's module only once
// that node ACKed endpoints listing it; removals are sent at once.
func TestBackendsWaitForACK(t *testing.T) {
	reg, k := testRegistry(t, 2)
	conf := newFakeConfirmer()
	srv := httptest.NewServer(&Server{Registry: reg, Confirmer: conf})
	defer srv.Close()
	b1 := revision.Backend{Address: "127.0.0.1", Port: 81, Ready: true}
	b2 := revision.Backend{Address: "127.0.0.2", Port: 0, Ready: true} // the revision's port (8080)
	reg.SetBackends(k, []revision.Backend{b1})

	resp, err := http.Get(srv.URL + StatePath + "?node=n1")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	read := updateReader(t, resp.Body)
	var a []string // ns/a's backends as the module holds them
	next := func() []string {
		t.Helper()
		a = applyAddrs(a, read())
		return a
	}
	if got := next(); len(got) != 0 {
		t.Fatalf("before any ACK: backends %v sent, want none", got)
	}
	conf.confirm(reg, k)
	if got := next(); !slices.Equal(got, []string{"127.0.0.1:81"}) {
		t.Fatalf("after the ACK: %v, want [127.0.0.1:81]", got)
	}
	reg.SetBackends(k, []revision.Backend{b1, b2})
	// Only b2 waits, so the update is unchanged and not sent; another
	// revision's arrival makes one.
	other := revision.DefaultSpec()
	other.Hosts, other.Port = []string{"b.example.com"}, 8080
	reg.Upsert(revision.Key{Namespace: "ns", Name: "b"}, other)
	if got := next(); !slices.Equal(got, []string{"127.0.0.1:81"}) {
		t.Fatalf("new backend before its ACK: %v, want only the confirmed 127.0.0.1:81", got)
	}
	conf.confirm(reg, k)
	if got := next(); !slices.Equal(got, []string{"127.0.0.1:81", "127.0.0.2:8080"}) {
		t.Fatalf("after the second ACK: %v", got)
	}
	reg.SetBackends(k, []revision.Backend{b2})
	if got := next(); !slices.Equal(got, []string{"127.0.0.2:8080"}) {
		t.Fatalf("removal before any ACK: %v, want 127.0.0.1:81 gone at once", got)
	}
}
