package local

import (
	"slices"
	"testing"

	"github.com/thaw-dev/thaw/revision"
	"github.com/thaw-dev/thaw/wake"
)

func TestParseWakePolicy(t *testing.T) {
	doc := `revisions:
- name: a
  hosts: [a.localhost]
  command: [x]
  wake:
    rules:
      - name: kube-probe
        userAgent: "kube-probe/.*"
        response: {status: 200, body: "ok\n"}
    waitingPage: {refresh: 3s}
    coldStartHeader: true
    schedule:
      - {name: office, start: "0 8 * * 1-5", duration: 10h, timeZone: Europe/Paris, minScale: 2}
- name: b
  hosts: [b.localhost]
  command: [x]
  wake:
    rules:
      - name: Bad_Name
        userAgent: "(("
- name: c
  hosts: [c.localhost]
  command: [x]
`
	cfg, err := Parse("f.yaml", t.TempDir(), []byte(doc), revision.DefaultSpec())
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Revisions) != 2 {
		t.Fatalf("valid revisions %d, want 2 (errors %v)", len(cfg.Revisions), cfg.Errors)
	}
	p := cfg.Revisions[0].Spec.Wake
	if p == nil || len(p.Rules) != 1 || p.Page == nil || !p.ColdStartHeader || len(p.Windows) != 1 {
		t.Fatalf("policy of a: %+v", p)
	}
	if a, r := p.Evaluate(wake.Request{Method: "GET", Path: "/", Header: func(n string) (string, bool) {
		return "kube-probe/1.37", n == "user-agent"
	}}); a != wake.Static || r.Name != "kube-probe" {
		t.Fatalf("kube-probe: %v %v", a, r)
	}
	if cfg.Revisions[1].Spec.Wake != nil {
		t.Fatalf("c has a policy: %+v", cfg.Revisions[1].Spec.Wake)
	}
	err = cfg.Invalid[revision.Key{Namespace: "local", Name: "b"}]
	if got, want := fields(err), []string{"wake.rules[0].name", "wake.rules[0].userAgent"}; !slices.Equal(got, want) {
		t.Fatalf("fields of b = %q, want %q (%v)", got, want, err)
	}
}

func TestParseWakeUnknownField(t *testing.T) {
	doc := "revisions:\n- name: a\n  hosts: [a.localhost]\n  command: [x]\n  wake:\n    rulez: []\n"
	cfg, err := Parse("f.yaml", t.TempDir(), []byte(doc), revision.DefaultSpec())
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Revisions) != 0 || len(cfg.Errors) != 1 {
		t.Fatalf("a typo under wake: %d valid, errors %v; want it refused", len(cfg.Revisions), cfg.Errors)
	}
}
