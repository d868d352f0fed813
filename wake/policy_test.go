package wake

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func hdrs(kv ...string) func(string) (string, bool) {
	return func(name string) (string, bool) {
		for i := 0; i+1 < len(kv); i += 2 {
			if kv[i] == name {
				return kv[i+1], true
			}
		}
		return "", false
	}
}

func mustCompile(t *testing.T, c *Config) *Policy {
	t.Helper()
	p, errs := Compile(c)
	if len(errs) > 0 {
		t.Fatalf("Compile: %v", errors.Join(errs...))
	}
	return p
}

func TestEvaluate(t *testing.T) {
	p := mustCompile(t, &Config{
		Rules: []RuleConfig{
			{Name: "kube-probe", UserAgent: "kube-probe/.*", Response: &ResponseConfig{Status: 200, Body: "ok\n"}},
			{Name: "health", Path: "/healthz|/readyz", Method: "GET|HEAD"},
			{Name: "monitor", Headers: map[string]string{"x-monitor": "uptime-.+"}},
		},
		WaitingPage: &PageConfig{},
	})
	browser := "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"
	tests := []struct {
		name string
		req  Request
		want Action
		rule string
	}{
		{"probe UA", Request{Method: "GET", Path: "/", Header: hdrs("user-agent", "kube-probe/1.37")}, Static, "kube-probe"},
		{"probe UA is anchored", Request{Method: "GET", Path: "/", Header: hdrs("user-agent", "not-kube-probe/1.37")}, Hold, ""},
		{"health path, query cut", Request{Method: "HEAD", Path: "/healthz?full=1"}, Static, "health"},
		{"health path, wrong method", Request{Method: "POST", Path: "/healthz"}, Hold, ""},
		{"health prefix is not a match", Request{Method: "GET", Path: "/healthz/deep"}, Hold, ""},
		{"header rule", Request{Method: "GET", Path: "/", Header: hdrs("x-monitor", "uptime-robot")}, Static, "monitor"},
		{"header rule, empty value", Request{Method: "GET", Path: "/", Header: hdrs("x-monitor", "uptime-")}, Hold, ""},
		{"browser", Request{Method: "GET", Path: "/", Header: hdrs("accept", browser)}, WaitingPage, ""},
		{"rule beats page", Request{Method: "GET", Path: "/healthz", Header: hdrs("accept", browser)}, Static, "health"},
		{"browser POST held", Request{Method: "POST", Path: "/", Header: hdrs("accept", browser)}, Hold, ""},
		{"websocket held", Request{Method: "GET", Path: "/", Header: hdrs("accept", browser, "upgrade", "websocket")}, Hold, ""},
		{"grpc held", Request{Method: "GET", Path: "/", Header: hdrs("accept", "text/html", "content-type", "application/grpc+proto")}, Hold, ""},
		{"curl held", Request{Method: "GET", Path: "/", Header: hdrs("accept", "*/*", "user-agent", "curl/8.5")}, Hold, ""},
		{"no headers held", Request{Method: "GET", Path: "/"}, Hold, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, rule := p.Evaluate(tt.req)
			if got != tt.want {
				t.Fatalf("action = %v, want %v", got, tt.want)
			}
			name := ""
			if rule != nil {
				name = rule.Name
			}
			if name != tt.rule {
				t.Fatalf("rule = %q, want %q", name, tt.rule)
			}
		})
	}
}

func TestNilPolicyHolds(t *testing.T) {
	var p *Policy
	if a, _ := p.Evaluate(Request{Method: "GET", Header: hdrs("accept", "text/html")}); a != Hold {
		t.Fatalf("nil policy: %v, want Hold", a)
	}
	if p, errs := Compile(&Config{}); p != nil || errs != nil {
		t.Fatalf("empty config: %v %v, want nil nil", p, errs)
	}
}

func TestCompileErrors(t *testing.T) {
	tests := []struct {
		name  string
		cfg   Config
		field string
	}{
		{"no matcher", Config{Rules: []RuleConfig{{Name: "a"}}}, "rules[0]"},
		{"bad name", Config{Rules: []RuleConfig{{Name: "A_b", Path: "/"}}}, "rules[0].name"},
		{"duplicate name", Config{Rules: []RuleConfig{{Name: "a", Path: "/"}, {Name: "a", Path: "/x"}}}, "rules[1].name"},
		{"bad regex", Config{Rules: []RuleConfig{{Name: "a", UserAgent: "(("}}}, "rules[0].userAgent"},
		{"long regex", Config{Rules: []RuleConfig{{Name: "a", Path: strings.Repeat("a", MaxRegexLen+1)}}}, "rules[0].path"},
		{"upper header", Config{Rules: []RuleConfig{{Name: "a", Headers: map[string]string{"X-A": "1"}}}}, "rules[0].headers"},
		{"status", Config{Rules: []RuleConfig{{Name: "a", Path: "/", Response: &ResponseConfig{Status: 99}}}}, "rules[0].response.status"},
		{"resp header crlf", Config{Rules: []RuleConfig{{Name: "a", Path: "/", Response: &ResponseConfig{Status: 200,
			Headers: map[string]string{"x-a": "1\r\nx-b: 2"}}}}}, "rules[0].response.headers.x-a"},
		{"resp content-length", Config{Rules: []RuleConfig{{Name: "a", Path: "/", Response: &ResponseConfig{Status: 200,
			Headers: map[string]string{"Content-Length": "1"}}}}}, "rules[0].response.headers"},
		{"body size", Config{Rules: []RuleConfig{{Name: "a", Path: "/", Response: &ResponseConfig{Status: 200,
			Body: strings.Repeat("x", MaxBodyBytes+1)}}}}, "rules[0].response.body"},
		{"too many rules", Config{Rules: make([]RuleConfig, MaxRules+1)}, "rules"},
		{"refresh", Config{WaitingPage: &PageConfig{Refresh: "10ms"}}, "waitingPage.refresh"},
		{"page status", Config{WaitingPage: &PageConfig{Status: 700}}, "waitingPage.status"},
		{"cron", Config{Schedule: []WindowConfig{{Name: "w", Start: "61 * * * *", Duration: "1h", MinScale: 1}}}, "schedule[0].start"},
		{"every", Config{Schedule: []WindowConfig{{Name: "w", Start: "@every 1h", Duration: "1h", MinScale: 1}}}, "schedule[0].start"},
		{"duration", Config{Schedule: []WindowConfig{{Name: "w", Start: "@daily", Duration: "10s", MinScale: 1}}}, "schedule[0].duration"},
		{"zone", Config{Schedule: []WindowConfig{{Name: "w", Start: "@daily", Duration: "1h", TimeZone: "Mars/Olympus", MinScale: 1}}}, "schedule[0].timeZone"},
		{"min scale", Config{Schedule: []WindowConfig{{Name: "w", Start: "@daily", Duration: "1h"}}}, "schedule[0].minScale"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, errs := Compile(&tt.cfg)
			if p != nil || len(errs) == 0 {
				t.Fatalf("Compile = %v, %v; want errors", p, errs)
			}
			var fe *FieldError
			if !errors.As(errs[0], &fe) || fe.Field != tt.field {
				t.Fatalf("first error %v, want field %q", errs[0], tt.field)
			}
		})
	}
}

func TestPageRender(t *testing.T) {
	p := mustCompile(t, &Config{WaitingPage: &PageConfig{Refresh: "3s"}})
	if p.Page.Status != 503 || !strings.Contains(p.Page.Body, `content="3"`) || strings.Contains(p.Page.Body, "{{") {
		t.Fatalf("default page: status %d body %q", p.Page.Status, p.Page.Body)
	}
	p = mustCompile(t, &Config{WaitingPage: &PageConfig{Status: 200, Body: "<p>wait {{refresh}}s</p>"}})
	if p.Page.Status != 200 || p.Page.Body != "<p>wait 2s</p>" {
		t.Fatalf("custom page: %d %q", p.Page.Status, p.Page.Body)
	}
}

func TestCompileDeterministic(t *testing.T) {
	// The registry compares Specs with reflect.DeepEqual: the same Config
	// compiled twice must compare equal, or every reload republishes.
	c := &Config{Rules: []RuleConfig{{Name: "a", UserAgent: "kube-probe/.*", Headers: map[string]string{"x-a": "1", "x-b": "2"}}},
		WaitingPage: &PageConfig{}, Schedule: []WindowConfig{{Name: "w", Start: "0 8 * * 1-5", Duration: "1h", TimeZone: "Europe/Paris", MinScale: 1}}}
	if a, b := mustCompile(t, c), mustCompile(t, c); !reflect.DeepEqual(a, b) {
		t.Fatal("two compilations of one Config differ")
	}
	c2 := *c
	c2.ColdStartHeader = true
	if a, b := mustCompile(t, c), mustCompile(t, &c2); reflect.DeepEqual(a, b) {
		t.Fatal("different Configs compare equal")
	}
}

func TestHeaderNamesLimited(t *testing.T) {
	for name, ok := range map[string]bool{"x-monitor": true, "accept": true, "user-agent": false, "authorization": false,
		"x-envoy-internal": false, "x-request-id": false} {
		_, errs := Compile(&Config{Rules: []RuleConfig{{Name: "a", Headers: map[string]string{name: ".*"}}}})
		if (len(errs) == 0) != ok {
			t.Errorf("header %q: errors %v, want ok=%v", name, errs, ok)
		}
	}
}
