package modsvc

import (
	"bufio"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/thaw-dev/thaw/module/state"
	"github.com/thaw-dev/thaw/revision"
)

// waitForTimer waits (bounded) until a stream armed its first-update
// bound on clk: the stream has decided to defer that update.
func waitForTimer(t *testing.T, clk *clocktesting.FakeClock) {
	t.Helper()
	for i := 0; !clk.HasWaiters(); i++ {
		if i == 1000 {
			t.Fatal("the stream never deferred its first update")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestFirstUpdateWaitsForACK: a stream's first update is deferred while
// it would withhold backends this node has not ACKed (a module that
// reconnects after a thaw restart keeps its last state meanwhile), and
// sent at the ACK or at the bound; one that withholds nothing is sent at
// once (a revision at zero, a fresh Envoy before any backend), and so is
// a fresh module's (no state.ResumeParam: it has no last state to keep,
// and a revision this node never ACKs must not delay the others).
func TestFirstUpdateWaitsForACK(t *testing.T) {
	b1 := revision.Backend{Address: "127.0.0.1", Port: 81, Ready: true}
	for _, tc := range []struct {
		name      string
		backends  []revision.Backend
		confirmed bool          // ACKed before the stream opens
		wait      time.Duration // Server.FirstUpdateWait
		deferred  bool          // the first update waits
		act       string        // while deferred: "ack" or "bound"
		fresh     bool          // the module has no state yet (no resume=1)
		want      []string
	}{
		{name: "no backends (at zero)", want: nil},
		{name: "already confirmed", backends: []revision.Backend{b1}, confirmed: true, want: []string{"127.0.0.1:81"}},
		{name: "not ready", backends: []revision.Backend{{Address: "127.0.0.1", Port: 81}}, want: nil},
		{name: "ACK arrives", backends: []revision.Backend{b1}, deferred: true, act: "ack", want: []string{"127.0.0.1:81"}},
		{name: "bound passes", backends: []revision.Backend{b1}, deferred: true, act: "bound", want: nil},
		{name: "bound passes, custom", backends: []revision.Backend{b1}, wait: time.Second, deferred: true, act: "bound", want: nil},
		{name: "wait disabled", backends: []revision.Backend{b1}, wait: -1, want: nil},
		{name: "fresh module: what is confirmed, at once", backends: []revision.Backend{b1}, fresh: true, want: nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reg, k := testRegistry(t, 2)
			reg.SetBackends(k, tc.backends)
			conf := newFakeConfirmer()
			if tc.confirmed {
				conf.confirm(reg, k)
			}
			clk := clocktesting.NewFakeClock(time.Unix(1, 0))
			srv := httptest.NewServer(&Server{Registry: reg, Confirmer: conf, Clock: clk, FirstUpdateWait: tc.wait})
			defer srv.Close()
			url := srv.URL + StatePath + "?node=n1&" + state.ResumeParam + "=1"
			if tc.fresh {
				url = srv.URL + StatePath + "?node=n1"
			}
			resp, err := http.Get(url)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			lines := make(chan []string, 4)
			go func() {
				sc := bufio.NewScanner(resp.Body)
				sc.Buffer(nil, state.MaxMessageBytes)
				for sc.Scan() {
					u, err := state.DecodeUpdate(sc.Bytes())
					if err != nil {
						t.Errorf("invalid update: %v", err)
						return
					}
					lines <- addrsOf(u)
				}
			}()
			if tc.deferred {
				waitForTimer(t, clk)
				select {
				case got := <-lines:
					t.Fatalf("first update %v sent before the ACK or the bound", got)
				default:
				}
				switch tc.act {
				case "ack":
					conf.confirm(reg, k)
				case "bound":
					wait := tc.wait
					if wait == 0 {
						wait = DefaultFirstUpdateWait
					}
					clk.Step(wait - time.Nanosecond)
					select {
					case got := <-lines:
						t.Fatalf("first update %v sent before the bound", got)
					default:
					}
					clk.Step(time.Nanosecond)
				}
			}
			select {
			case got := <-lines:
				if !slices.Equal(got, tc.want) {
					t.Fatalf("first update: backends %v, want %v", got, tc.want)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("no first update")
			}
			if !tc.deferred && clk.HasWaiters() {
				t.Fatal("a first update that withholds nothing armed the bound")
			}
		})
	}
}
