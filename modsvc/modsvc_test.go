package modsvc

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/thaw-dev/thaw/autoscaler"
	"github.com/thaw-dev/thaw/revision"
)

func TestSlotsSplitExactly(t *testing.T) {
	for _, tc := range []struct{ cc, envoys int }{{4, 1}, {4, 3}, {1, 3}, {10, 4}, {7, 7}, {2, 5}} {
		for backend := 0; backend < 5; backend++ {
			sum := 0
			for i := 0; i < tc.envoys; i++ {
				s := Slots(tc.cc, tc.envoys, i, backend)
				if s == 0 || s < -1 {
					t.Fatalf("cc %d envoys %d: slots %d", tc.cc, tc.envoys, s)
				}
				if s > 0 {
					sum += int(s)
				}
			}
			if sum != tc.cc {
				t.Errorf("cc %d over %d envoys, backend %d: shares sum to %d", tc.cc, tc.envoys, backend, sum)
			}
		}
	}
	if Slots(0, 3, 1, 0) != 0 {
		t.Error("cc 0 must stay unlimited")
	}
}

func testRegistry(t *testing.T, cc int) (*revision.Registry, revision.Key) {
	t.Helper()
	reg := revision.NewRegistry(revision.RegistryOptions{})
	k := revision.Key{Namespace: "ns", Name: "a"}
	s := revision.DefaultSpec()
	s.Hosts, s.Port, s.ContainerConcurrency = []string{"a.example.com"}, 8080, cc
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	reg.Upsert(k, s)
	return reg, k
}

func TestUpdateTranslation(t *testing.T) {
	reg, k := testRegistry(t, 4)
	reg.SetBackends(k, []revision.Backend{{Address: "127.0.0.1", Port: 81, Ready: true}, {Address: "127.0.0.2", Port: 82}})
	u := Update(reg.Snapshot(), 1, 0)
	if len(u.Revisions) != 1 || !u.Full {
		t.Fatalf("update %+v", u)
	}
	r := u.Revisions[0]
	if r.Key != "ns/a" || len(r.Backends) != 1 || r.Backends[0].Addr != "127.0.0.1:81" || r.Backends[0].Slots != 4 {
		t.Fatalf("revision %+v: want ns/a with the one ready backend and 4 slots", r)
	}
	if r.QueueDepth < 1 || r.HoldTimeoutMs < 1 {
		t.Fatalf("limits missing: %+v", r)
	}
}

type recorder struct {
	mu      sync.Mutex
	samples []autoscaler.Sample
	pokes   []revision.Key
}

func (r *recorder) Record(s autoscaler.Sample) {
	r.mu.Lock()
	r.samples = append(r.samples, s)
	r.mu.Unlock()
}
func (r *recorder) Poke(k revision.Key) { r.mu.Lock(); r.pokes = append(r.pokes, k); r.mu.Unlock() }

func TestServerStreamsAndTakesReports(t *testing.T) {
	reg, k := testRegistry(t, 2)
	rec := &recorder{}
	srv := httptest.NewServer(&Server{Registry: reg, Recorder: rec, Poker: rec})
	defer srv.Close()

	resp, err := http.Get(srv.URL + StatePath + "?node=n1")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	next := updateReader(t, resp.Body)
	if u := next(); len(u.Revisions) != 1 || len(u.Revisions[0].Backends) != 0 {
		t.Fatalf("first update %+v: want ns/a without backends", u)
	}
	reg.SetBackends(k, []revision.Backend{{Address: "127.0.0.1", Port: 81, Ready: true}})
	if u := next(); len(u.Revisions[0].Backends) != 1 || u.Revisions[0].Backends[0].Slots != 2 {
		t.Fatalf("after backends: %+v", u)
	}

	post := func(body string) int {
		r, err := http.Post(srv.URL+ReportPath, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		r.Body.Close()
		return r.StatusCode
	}
	if c := post(`{"node":"n1","revisions":[{"key":"ns/a","held":3,"inFlight":2}],"pokes":["ns/a"]}`); c != http.StatusNoContent {
		t.Fatalf("report answered %d", c)
	}
	rec.mu.Lock()
	if len(rec.samples) != 1 || rec.samples[0].Concurrency != 3 || rec.samples[0].Source != "module/n1" || len(rec.pokes) != 1 || rec.pokes[0] != k {
		t.Fatalf("samples %+v pokes %+v: want held 3 from module/n1 and one poke", rec.samples, rec.pokes)
	}
	rec.mu.Unlock()
	if c := post(`{"revisions":[{"key":"bad","held":1}]}`); c != http.StatusBadRequest {
		t.Fatalf("invalid report answered %d, want 400", c)
	}
}
