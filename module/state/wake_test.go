package state

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/thaw-dev/thaw/wake"
)

// holderJSON compiles c the way thaw does and returns what thaw sends.
func holderJSON(t *testing.T, c *wake.Config) json.RawMessage {
	t.Helper()
	p, errs := wake.Compile(c)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	return p.HolderConfig()
}

func wakeUpdate(key string, raw json.RawMessage, backends ...BackendUpdate) *Update {
	u := update(key, 10, time.Minute, backends...)
	u.Revisions[0].Wake = raw
	return u
}

var testPolicy = &wake.Config{
	Rules: []wake.RuleConfig{
		{Name: "probe", UserAgent: "kube-probe/.*", Response: &wake.ResponseConfig{Status: 200, Body: "ok\n"}},
		{Name: "bots", UserAgent: ".*bot.*"},
	},
	WaitingPage:     &wake.PageConfig{Refresh: "1s"},
	ColdStartHeader: true,
	Schedule:        []wake.WindowConfig{{Name: "day", Start: "0 8 * * *", Duration: "1h", MinScale: 1}},
}

func req(method, path string, hdr map[string]string) func() wake.Request {
	return func() wake.Request {
		return wake.Request{Method: method, Path: path, Header: func(n string) (string, bool) {
			v, ok := hdr[n]
			return v, ok
		}}
	}
}

// TestWakePolicyCompiledOncePerChange: the policy is compiled when its
// bytes change, not on every update; the schedule is not sent; an empty
// field removes it.
func TestWakePolicyCompiledOncePerChange(t *testing.T) {
	raw := holderJSON(t, testPolicy)
	var c wake.Config
	if err := json.Unmarshal(raw, &c); err != nil || len(c.Schedule) != 0 || len(c.Rules) != 2 || !c.ColdStartHeader {
		t.Fatalf("holder config %s (%v): want rules, page and header, no schedule", raw, err)
	}
	tab := NewTable(time.Minute, 10)
	if err := tab.Apply(wakeUpdate("ns/a", raw)); err != nil {
		t.Fatal(err)
	}
	r := tab.Lookup("ns/a")
	p1, atZero := r.WakePolicy()
	if p1 == nil || !atZero || !r.ColdStartHeader() {
		t.Fatalf("policy %v at zero %v", p1, atZero)
	}
	if err := tab.Apply(wakeUpdate("ns/a", append(json.RawMessage(nil), raw...), BackendUpdate{Addr: "127.0.0.1:1"})); err != nil {
		t.Fatal(err)
	}
	p2, atZero := r.WakePolicy()
	if p2 != p1 {
		t.Fatal("the same policy bytes were compiled again")
	}
	if atZero {
		t.Fatal("at zero with a backend")
	}
	if err := tab.Apply(wakeUpdate("ns/a", holderJSON(t, &wake.Config{ColdStartHeader: true}))); err != nil {
		t.Fatal(err)
	}
	if p3, _ := r.WakePolicy(); p3 == p1 || p3 == nil || len(p3.Rules) != 0 {
		t.Fatalf("changed policy not installed: %+v", p3)
	}
	if err := tab.Apply(wakeUpdate("ns/a", nil)); err != nil {
		t.Fatal(err)
	}
	if p, _ := r.WakePolicy(); p != nil || r.ColdStartHeader() {
		t.Fatalf("removed policy still installed: %+v", p)
	}
}

// TestWakePolicyInvalid: a policy that does not compile is reported and
// ignored; the revision's backends are installed all the same.
func TestWakePolicyInvalid(t *testing.T) {
	tab := NewTable(time.Minute, 10)
	err := tab.Apply(wakeUpdate("ns/a", json.RawMessage(`{"rules":[{"name":"x","path":"(("}]}`), BackendUpdate{Addr: "127.0.0.1:1", Slots: 1}))
	if !errors.Is(err, ErrInvalid) {
		t.Fatalf("Apply = %v, want ErrInvalid", err)
	}
	r := tab.Lookup("ns/a")
	if p, _ := r.WakePolicy(); p != nil {
		t.Fatalf("invalid policy installed: %+v", p)
	}
	if b := r.Acquire(); b == nil {
		t.Fatal("backend of a revision with an invalid policy not installed")
	}
	if err := tab.Apply(wakeUpdate("ns/a", json.RawMessage(`{"unknown":1}`))); !errors.Is(err, ErrInvalid) {
		t.Fatalf("unknown field: Apply = %v, want ErrInvalid", err)
	}
}

func TestWakeAnswer(t *testing.T) {
	tab := NewTable(time.Minute, 10)
	var pokes []string
	tab.SetOnPoke(func(k string) { pokes = append(pokes, k) })
	if err := tab.Apply(wakeUpdate("ns/a", holderJSON(t, testPolicy))); err != nil {
		t.Fatal(err)
	}
	r := tab.Lookup("ns/a")
	browser := map[string]string{"accept": "text/html", "user-agent": "Mozilla/5.0"}
	tests := []struct {
		name   string
		req    func() wake.Request
		action wake.Action
		rule   string
	}{
		{"probe", req("GET", "/healthz", map[string]string{"user-agent": "kube-probe/1.37"}), wake.Static, "probe"},
		{"bot", req("GET", "/", map[string]string{"user-agent": "Googlebot"}), wake.Static, "bots"},
		{"browser", req("GET", "/", browser), wake.WaitingPage, ""},
		{"curl", req("GET", "/", map[string]string{"user-agent": "curl/8", "accept": "*/*"}), wake.Hold, ""},
		{"post from a browser", req("POST", "/", browser), wake.Hold, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			action, rule := r.WakeAnswer(tt.req)
			if action != tt.action || (rule == nil) != (tt.rule == "") || (rule != nil && rule.Name != tt.rule) {
				t.Fatalf("WakeAnswer = %v %+v, want %v %q", action, rule, tt.action, tt.rule)
			}
		})
	}
	if len(pokes) != 1 || pokes[0] != "ns/a" {
		t.Fatalf("pokes %v: want one, for the waiting page", pokes)
	}
	got := map[string]int64{}
	for _, c := range tab.WakeCounts() {
		got[c.Key+"/"+c.Rule+map[bool]string{true: "page"}[c.Page]] += c.Count
	}
	want := map[string]int64{"ns/a/probe": 1, "ns/a/bots": 1, "ns/a/page": 1}
	if len(got) != len(want) || got["ns/a/probe"] != 1 || got["ns/a/bots"] != 1 || got["ns/a/page"] != 1 {
		t.Fatalf("WakeCounts = %v, want %v", got, want)
	}
	if again := tab.WakeCounts(); len(again) != 0 {
		t.Fatalf("WakeCounts reported twice: %v", again)
	}

	// Awake: the policy is not evaluated at all.
	if err := tab.Apply(wakeUpdate("ns/a", holderJSON(t, testPolicy), BackendUpdate{Addr: "127.0.0.1:1"})); err != nil {
		t.Fatal(err)
	}
	called := false
	if action, _ := r.WakeAnswer(func() wake.Request { called = true; return wake.Request{} }); action != wake.Hold || called {
		t.Fatalf("awake revision: action %v, request built %v", action, called)
	}
}

// TestWakeAnswerWithoutPolicy: no policy, or one with only the cold-start
// header, never builds the request.
func TestWakeAnswerWithoutPolicy(t *testing.T) {
	tab := NewTable(time.Minute, 10)
	if err := tab.Apply(wakeUpdate("ns/a", holderJSON(t, &wake.Config{ColdStartHeader: true}))); err != nil {
		t.Fatal(err)
	}
	tab.Revision("ns/b")
	for _, k := range []string{"ns/a", "ns/b"} {
		called := false
		if action, _ := tab.Lookup(k).WakeAnswer(func() wake.Request { called = true; return wake.Request{} }); action != wake.Hold || called {
			t.Fatalf("%s: action %v, request built %v", k, action, called)
		}
	}
}

func TestDecodeReportWake(t *testing.T) {
	for _, tt := range []struct {
		in string
		ok bool
	}{
		{`{"wake":[{"key":"ns/a","rule":"probe","count":2},{"key":"ns/a","page":true,"count":1}]}`, true},
		{`{"wake":[{"key":"ns/a","count":2}]}`, false},
		{`{"wake":[{"key":"ns/a","rule":"p","page":true,"count":2}]}`, false},
		{`{"wake":[{"key":"ns/a","rule":"p","count":-1}]}`, false},
		{`{"wake":[{"key":"bad","rule":"p","count":1}]}`, false},
	} {
		if _, err := DecodeReport([]byte(tt.in)); (err == nil) != tt.ok {
			t.Errorf("DecodeReport(%s) = %v, want ok %v", tt.in, err, tt.ok)
		}
	}
}

// TestWakeFailure: a published wake failure answers held requests at once
// (WakeFailed, notified) and refuses new ones; a backend clears it.
func TestWakeFailure(t *testing.T) {
	tab := NewTable(time.Minute, 10)
	tab.Apply(update("ns/a", 10, time.Minute))
	r := tab.Lookup("ns/a")
	notified := make(chan *Waiter, 2)
	w, err := r.Hold(func(w *Waiter) { notified <- w })
	if err != nil || w.Outcome() != Waiting {
		t.Fatalf("Hold = %v, %v", w, err)
	}
	f := &WakeFailure{Reason: "ProcessExited", Message: "exit status 3\nline two", RetryAtMs: time.Now().Add(5 * time.Second).UnixMilli()}
	u := update("ns/a", 10, time.Minute)
	u.Revisions[0].WakeFailure = f
	if err := tab.Apply(u); err != nil {
		t.Fatal(err)
	}
	select {
	case got := <-notified:
		if got != w || w.Outcome() != WakeFailed || w.Failure() != f {
			t.Fatalf("held request: outcome %v failure %+v", w.Outcome(), w.Failure())
		}
	case <-time.After(5 * time.Second):
		t.Fatal("held request not answered when the failure was published")
	}
	if r.Held() != 0 {
		t.Fatalf("Held = %d after the failure", r.Held())
	}
	var we *WakeFailedError
	if _, err := r.Hold(func(*Waiter) {}); !errors.As(err, &we) || !errors.Is(err, ErrWakeFailed) || we.Failure != f {
		t.Fatalf("Hold during a failure = %v, want a WakeFailedError", err)
	}
	if ra := f.RetryAfter(time.Now()); ra < 4 || ra > 5 {
		t.Fatalf("RetryAfter = %d s, want 5", ra)
	}
	if b := f.Body("ns/a"); b != "revision ns/a could not be woken: ProcessExited: exit status 3 line two\n" {
		t.Fatalf("Body = %q", b)
	}
	// A backend clears it: no failure while the revision has one.
	u = update("ns/a", 10, time.Minute, BackendUpdate{Addr: "127.0.0.1:1"})
	u.Revisions[0].WakeFailure = f
	tab.Apply(u)
	if r.WakeFailure() != nil {
		t.Fatal("failure reported while a backend is ready")
	}
	if _, err := DecodeUpdate([]byte(`{"revisions":[{"key":"ns/a","queueDepth":1,"holdTimeoutMs":1,"wakeFailure":{"reason":"bad reason"}}]}`)); err == nil {
		t.Fatal("a reason with a space was accepted")
	}
}
