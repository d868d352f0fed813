package modsvc

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/thaw-dev/thaw/module/state"
	"github.com/thaw-dev/thaw/revision"
	"github.com/thaw-dev/thaw/xds"
)

var _ xds.ModuleStates = (*Server)(nil)

// TestAppliedStates: which snapshot each numbered stream's module holds,
// from what was sent and what the module echoed.
func TestAppliedStates(t *testing.T) {
	var a appliedStates
	s1, s2 := a.open("n1"), a.open("n2")
	if got := a.lagging(1, 0); !slices.Equal(got, []string{"n1", "n2"}) {
		t.Fatalf("before any update: lagging %v, want both", got)
	}
	q1 := a.sent(s1, 5)
	q2 := a.sent(s2, 5)
	if q2 <= q1 || q1 == 0 {
		t.Fatalf("numbers %d then %d: want increasing, not 0", q1, q2)
	}
	a.confirm("n2", q1) // n1's number echoed by n2: nothing
	a.confirm("n1", q1+1000)
	if got := a.lagging(5, 0); !slices.Equal(got, []string{"n1", "n2"}) {
		t.Fatalf("after foreign echoes: lagging %v, want both", got)
	}
	a.confirm("n1", q1)
	if got := a.lagging(5, 0); !slices.Equal(got, []string{"n2"}) {
		t.Fatalf("n1 confirmed 5: lagging %v, want [n2]", got)
	}
	if got := a.lagging(6, 0); !slices.Equal(got, []string{"n1", "n2"}) {
		t.Fatalf("for 6: lagging %v, want both", got)
	}
	// Snapshot 7 gives n1 the same update: applying 5's is applying 7.
	a.unchanged(s1, 7)
	if got := a.lagging(7, 0); !slices.Equal(got, []string{"n2"}) {
		t.Fatalf("n1 unchanged at 7: lagging %v, want [n2]", got)
	}
	// n2 unchanged at 7 before its echo: its pending update carries 7.
	a.unchanged(s2, 7)
	a.confirm("n2", q2)
	if got := a.lagging(7, 0); len(got) != 0 {
		t.Fatalf("both hold 7: lagging %v", got)
	}
	// Two updates in flight; the later echo confirms both.
	q3, q4 := a.sent(s1, 8), a.sent(s1, 9)
	a.confirm("n1", q4)
	a.confirm("n1", q3) // late, older: no step back
	if got := a.lagging(9, 0); !slices.Equal(got, []string{"n2"}) {
		t.Fatalf("n1 confirmed 9: lagging %v, want [n2]", got)
	}
	ch := a.changed()
	a.close(s2) // gone: not waited for
	select {
	case <-ch:
	default:
		t.Fatal("closing a stream did not notify")
	}
	if got := a.lagging(9, 1); len(got) != 0 {
		t.Fatalf("n2 gone: lagging %v", got)
	}
	// A module that never echoes: its remembered numbers stay bounded.
	for v := uint64(10); v < 10+3*maxPendingSeqs; v++ {
		a.sent(s1, v)
	}
	if len(s1.pending) != maxPendingSeqs {
		t.Fatalf("pending %d, want the bound %d", len(s1.pending), maxPendingSeqs)
	}
}

func TestWithSeq(t *testing.T) {
	for _, in := range []string{`{"full":true}` + "\n", `{}` + "\n"} {
		b := withSeq([]byte(in), 42)
		var u state.Update
		if err := json.Unmarshal(b, &u); err != nil || u.Seq != 42 || !strings.HasSuffix(string(b), "\n") {
			t.Errorf("withSeq(%q) = %q: seq %d, %v", in, b, u.Seq, err)
		}
	}
}

// TestStreamNumbersAndConfirms: through the HTTP server, a stream that
// asks (state.SeqParam) gets numbered updates and lags until its report
// echoes the number; one that does not ask gets no number (a module built
// before it refuses unknown fields) and is not waited for; a closed
// stream is not waited for.
func TestStreamNumbersAndConfirms(t *testing.T) {
	reg, k := testRegistry(t, 2)
	svc := &Server{Registry: reg}
	srv := httptest.NewServer(svc)
	defer srv.Close()

	open := func(node string, seq bool) (next func() (*state.Update, []byte), closeStream func()) {
		t.Helper()
		u := srv.URL + StatePath + "?node=" + node
		if seq {
			u += "&" + state.SeqParam + "=1"
		}
		resp, err := http.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, state.MaxMessageBytes)
		return func() (*state.Update, []byte) {
			t.Helper()
			if !sc.Scan() {
				t.Fatalf("stream of %s ended: %v", node, sc.Err())
			}
			u, err := state.DecodeUpdate(sc.Bytes())
			if err != nil {
				t.Fatalf("invalid update %q: %v", sc.Bytes(), err)
			}
			return u, sc.Bytes()
		}, func() { resp.Body.Close() }
	}
	report := func(body string) {
		t.Helper()
		r, err := http.Post(srv.URL+ReportPath, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		r.Body.Close()
		if r.StatusCode != http.StatusNoContent {
			t.Fatalf("report %s answered %d", body, r.StatusCode)
		}
	}
	waitLag := func(version uint64, want ...string) {
		t.Helper()
		for i := 0; ; i++ {
			got := svc.LaggingModules(version, 0)
			if slices.Equal(got, want) {
				return
			}
			if i == 500 {
				t.Fatalf("lagging for %d: %v, want %v", version, got, want)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}

	nextOld, closeOld := open("old", false)
	defer closeOld()
	if u, b := nextOld(); u.Seq != 0 || strings.Contains(string(b), "seq") {
		t.Fatalf("unnumbered stream got %q", b)
	}
	next, closeNew := open("n1", true)
	u1, _ := next()
	if u1.Seq == 0 {
		t.Fatal("numbered stream's first update has no seq")
	}
	v1 := reg.Snapshot().Version
	waitLag(v1, "n1")
	report(fmt.Sprintf(`{"node":"n1","applied":%d}`, u1.Seq))
	waitLag(v1)

	reg.SetBackends(k, []revision.Backend{{Address: "127.0.0.1", Port: 81, Ready: true}})
	v2 := reg.Snapshot().Version
	u2, _ := next()
	if u2.Seq <= u1.Seq || len(u2.Revisions[0].Backends) != 1 {
		t.Fatalf("second update %+v after seq %d", u2, u1.Seq)
	}
	waitLag(v2, "n1")
	report(fmt.Sprintf(`{"node":"n1","applied":%d}`, u1.Seq)) // stale echo
	waitLag(v2, "n1")
	report(fmt.Sprintf(`{"node":"n1","applied":%d}`, u2.Seq))
	waitLag(v2)

	closeNew()
	reg.SetBackends(k, nil)
	waitLag(reg.Snapshot().Version) // n1 gone, "old" not numbered
}
