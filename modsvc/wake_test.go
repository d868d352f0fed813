package modsvc

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/thaw-dev/thaw/module/state"
	"github.com/thaw-dev/thaw/revision"
	"github.com/thaw-dev/thaw/wake"
)

func wakeRegistry(t *testing.T) (*revision.Registry, revision.Key) {
	t.Helper()
	reg := revision.NewRegistry(revision.RegistryOptions{})
	k := revision.Key{Namespace: "ns", Name: "a"}
	s := revision.DefaultSpec()
	s.Hosts, s.Port = []string{"a.example.com"}, 8080
	pol, errs := wake.Compile(&wake.Config{
		Rules:       []wake.RuleConfig{{Name: "probe", UserAgent: "kube-probe/.*"}},
		WaitingPage: &wake.PageConfig{},
		Schedule:    []wake.WindowConfig{{Name: "day", Start: "@daily", Duration: "1h", MinScale: 1}},
	})
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	s.Wake = pol
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	reg.Upsert(k, s)
	reg.Upsert(revision.Key{Namespace: "ns", Name: "plain"}, func() revision.Spec {
		p := revision.DefaultSpec()
		p.Hosts, p.Port = []string{"p.example.com"}, 8080
		return p
	}())
	return reg, k
}

// TestUpdateCarriesWakePolicy: the state update carries the holder part of
// a revision's wake policy (no schedule), and nothing for a revision
// without one.
func TestUpdateCarriesWakePolicy(t *testing.T) {
	reg, k := wakeRegistry(t)
	u := Update(reg.Snapshot(), 1, 0)
	if len(u.Revisions) != 2 {
		t.Fatalf("update %+v", u)
	}
	want := reg.Snapshot().Get(k).Spec.Wake.HolderConfig()
	if got := u.Revisions[0].Wake; !bytes.Equal(got, want) || bytes.Contains(got, []byte("schedule")) {
		t.Fatalf("ns/a wake = %s, want %s without a schedule", got, want)
	}
	if got := u.Revisions[1].Wake; got != nil {
		t.Fatalf("ns/plain wake = %s, want none", got)
	}
	tab := state.NewTable(0, 1)
	if err := tab.Apply(u); err != nil {
		t.Fatalf("the module refused thaw's own policy: %v", err)
	}
}

type wakeCounts map[string]int64

func (w wakeCounts) CountWakeAnswers(key revision.Key, rule string, page bool, n int64) {
	if page {
		rule = "page"
	}
	w[key.String()+"/"+rule] += n
}

// TestReportWakeCounts: wake answers reach the counter only for revisions
// and rules of the configuration (metric labels stay bounded).
func TestReportWakeCounts(t *testing.T) {
	reg, _ := wakeRegistry(t)
	got := wakeCounts{}
	s := &Server{Registry: reg, WakeCounter: got}
	err := s.apply(&state.Report{Wake: []state.WakeCount{
		{Key: "ns/a", Rule: "probe", Count: 3},
		{Key: "ns/a", Page: true, Count: 2},
		{Key: "ns/a", Rule: "made-up", Count: 5},
		{Key: "ns/plain", Page: true, Count: 1},
		{Key: "ns/gone", Rule: "probe", Count: 1},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got["ns/a/probe"] != 3 || got["ns/a/page"] != 2 {
		t.Fatalf("counted %v, want ns/a/probe 3 and ns/a/page 2 only", got)
	}
}

// TestUpdateCarriesWakeFailure: a revision whose wake-up failed and that
// has no ready backend carries the failure; the module accepts it.
func TestUpdateCarriesWakeFailure(t *testing.T) {
	reg, k := testRegistry(t, 0)
	at := time.Unix(1_800_000_000, 0)
	reg.SetWakeFailure(k, &revision.WakeFailure{Reason: revision.WakeProcessExited, Message: "exit status 3", RetryAt: at})
	var u *state.Update
	for i := 0; i < 100; i++ { // the registry publishes asynchronously
		if u = Update(reg.Snapshot(), 1, 0); u.Revisions[0].WakeFailure != nil {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	f := u.Revisions[0].WakeFailure
	if f == nil || f.Reason != "ProcessExited" || f.Message != "exit status 3" || f.RetryAtMs != at.UnixMilli() {
		t.Fatalf("wake failure %+v", f)
	}
	if err := state.NewTable(0, 1).Apply(u); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(u)
	if _, err := state.DecodeUpdate(b); err != nil {
		t.Fatalf("the module refuses thaw's update: %v", err)
	}
}
