package extproc

import (
	"errors"
	"strings"
	"testing"
	"time"

	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/thaw-dev/thaw/revision"
	"github.com/thaw-dev/thaw/wake"
)

var sleepy = revision.Key{Namespace: "default", Name: "sleepy"}

// wakeRevision adds sleepy with a wake policy and the given backends.
func (e *env) wakeRevision(c *wake.Config, backends ...string) {
	e.t.Helper()
	s := revision.DefaultSpec()
	s.Hosts, s.Port = []string{"sleepy.example.com"}, 8080
	pol, errs := wake.Compile(c)
	if len(errs) > 0 {
		e.t.Fatal(errors.Join(errs...))
	}
	s.Wake = pol
	e.reg.Upsert(sleepy, s)
	e.setBackends(sleepy, backends...)
	e.reg.SetSynced()
	e.waitApplied(sleepy, len(backends))
}

func immediateOf(t *testing.T, r *extprocv3.ProcessingResponse) *extprocv3.ImmediateResponse {
	t.Helper()
	ir := r.GetImmediateResponse()
	if ir == nil {
		t.Fatalf("want an immediate response, got %v", r)
	}
	return ir
}

func headerOf(ir *extprocv3.ImmediateResponse, name string) string {
	for _, h := range ir.GetHeaders().GetSetHeaders() {
		if h.GetHeader().GetKey() == name {
			return string(h.GetHeader().GetRawValue())
		}
	}
	return ""
}

func coldStartOf(r *extprocv3.ProcessingResponse) (string, bool) {
	v, ok := r.GetDynamicMetadata().GetFields()[MetadataNamespace].GetStructValue().GetFields()[ColdStartField]
	return v.GetStringValue(), ok
}

var testPolicy = &wake.Config{
	Rules: []wake.RuleConfig{
		{Name: "kube-probe", UserAgent: "kube-probe/.*", Response: &wake.ResponseConfig{Status: 200,
			Headers: map[string]string{"content-type": "text/plain"}, Body: "ok\n"}},
		{Name: "bots", UserAgent: ".*bot.*"},
	},
	WaitingPage:     &wake.PageConfig{},
	ColdStartHeader: true,
}

func TestWakePolicyAtZero(t *testing.T) {
	e := newEnv(t, 10*time.Second)
	e.wakeRevision(testPolicy)
	rev := headers(RevisionHeader, sleepy.String(), "user-agent", "kube-probe/1.37")

	st, _ := e.open(rev)
	ir := immediateOf(t, recv(t, st))
	if ir.GetStatus().GetCode() != 200 || string(ir.GetBody()) != "ok\n" || headerOf(ir, "content-type") != "text/plain" {
		t.Fatalf("probe at zero: %v", ir)
	}
	if got := testutil.ToFloat64(e.srv.wake.rules.WithLabelValues(sleepy.String(), "kube-probe")); got != 1 {
		t.Fatalf("rule metric = %v, want 1", got)
	}
	if h, _ := e.act.Stats(sleepy); h != 0 {
		t.Fatalf("probe was held: %d", h)
	}

	st, _ = e.open(headers(RevisionHeader, sleepy.String(), "user-agent", "Googlebot/2.1"))
	ir = immediateOf(t, recv(t, st))
	if ir.GetStatus().GetCode() != 503 || headerOf(ir, "retry-after") != "1" {
		t.Fatalf("bot at zero: %v", ir)
	}

	st, _ = e.open(headers(RevisionHeader, sleepy.String(), "accept", "text/html,*/*"))
	ir = immediateOf(t, recv(t, st))
	if ir.GetStatus().GetCode() != 503 || !strings.Contains(string(ir.GetBody()), `http-equiv="refresh"`) ||
		headerOf(ir, "content-type") != "text/html; charset=utf-8" || headerOf(ir, "retry-after") != "2" {
		t.Fatalf("browser at zero: %v", ir)
	}
	if got := testutil.ToFloat64(e.srv.wake.pages.WithLabelValues(sleepy.String())); got != 1 {
		t.Fatalf("page metric = %v, want 1", got)
	}
	if got := counterValue(e.prom, "thaw_extproc_responses_total", outcomeWaitingPage); got != 1 {
		t.Fatalf("waiting_page outcome = %v, want 1", got)
	}

	// An API client is held; once a backend is ready it is routed with
	// the time held.
	st, _ = e.open(headers(RevisionHeader, sleepy.String(), "user-agent", "curl/8.5", "accept", "*/*"))
	if r := recv(t, st); r.GetOverrideMessageTimeout() == nil {
		t.Fatalf("curl at zero: want override_message_timeout, got %v", r)
	}
	e.setBackends(sleepy, "127.0.0.1")
	r := recv(t, st)
	if ms, ok := coldStartOf(r); !ok || ms == "" {
		t.Fatalf("held request: no %s in %v", ColdStartField, r)
	}
}

func TestWakePolicyAwake(t *testing.T) {
	e := newEnv(t, 10*time.Second)
	e.wakeRevision(testPolicy, "127.0.0.1")
	for _, kv := range [][]string{{"user-agent", "kube-probe/1.37"}, {"user-agent", "Googlebot"}, {"accept", "text/html"}, {"accept", "*/*"}} {
		st, _ := e.open(headers(RevisionHeader, sleepy.String(), kv[0], kv[1]))
		r := recv(t, st)
		if r.GetRequestHeaders() == nil {
			t.Fatalf("%v while awake: want routed, got %v", kv, r)
		}
		if _, ok := coldStartOf(r); ok {
			t.Fatalf("%v while awake: unheld request has %s", kv, ColdStartField)
		}
	}
}

func TestColdStartHeaderOff(t *testing.T) {
	e := newEnv(t, 10*time.Second)
	e.wakeRevision(&wake.Config{Rules: []wake.RuleConfig{{Name: "p", Path: "/healthz"}}})
	st, _ := e.open(headers(RevisionHeader, sleepy.String()))
	if r := recv(t, st); r.GetOverrideMessageTimeout() == nil {
		t.Fatalf("want held, got %v", r)
	}
	e.setBackends(sleepy, "127.0.0.1")
	if r := recv(t, st); r.GetRequestHeaders() == nil {
		t.Fatalf("want routed, got %v", r)
	} else if _, ok := coldStartOf(r); ok {
		t.Fatalf("coldStartHeader off: metadata has %s", ColdStartField)
	}
}

func TestStaticResponsesValidate(t *testing.T) {
	p, errs := wake.Compile(testPolicy)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	for _, r := range p.Rules {
		if r.Response == nil {
			continue
		}
		if err := staticResponse(r.Response.Status, r.Response.Headers, r.Response.Body, "d", time.Second).ValidateAll(); err != nil {
			t.Fatalf("rule %s: %v", r.Name, err)
		}
	}
	if err := coldStartRoute("127.0.0.1:1", true, 3*time.Millisecond).ValidateAll(); err != nil {
		t.Fatal(err)
	}
}

// TestCountWakeAnswers: the module's reported answers land in the same
// metrics as the ext_proc path's own.
func TestCountWakeAnswers(t *testing.T) {
	e := newEnv(t, 10*time.Second)
	e.srv.CountWakeAnswers(sleepy, "kube-probe", false, 3)
	e.srv.CountWakeAnswers(sleepy, "", true, 2)
	e.srv.CountWakeAnswers(sleepy, "kube-probe", false, 0)
	if got := testutil.ToFloat64(e.srv.wake.rules.WithLabelValues(sleepy.String(), "kube-probe")); got != 3 {
		t.Fatalf("rule metric = %v, want 3", got)
	}
	if got := testutil.ToFloat64(e.srv.wake.pages.WithLabelValues(sleepy.String())); got != 2 {
		t.Fatalf("page metric = %v, want 2", got)
	}
}
