package wake

import "testing"

// BenchmarkEvaluate measures one decision for a request to a revision at
// zero with three rules and a waiting page (the hold path only), for a
// request no rule matches (the most work: every rule tried).
func BenchmarkEvaluate(b *testing.B) {
	p, errs := Compile(&Config{Rules: []RuleConfig{
		{Name: "kube-probe", UserAgent: "kube-probe/.*|ELB-HealthChecker/.*"},
		{Name: "uptime", Path: "/healthz|/status", Method: "GET|HEAD"},
		{Name: "bots", UserAgent: ".*(bot|crawler|spider).*"},
	}, WaitingPage: &PageConfig{}})
	if len(errs) > 0 {
		b.Fatal(errs)
	}
	hdr := func(name string) (string, bool) {
		if name == "user-agent" {
			return "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0 Safari/537.36", true
		}
		return "", false
	}
	r := Request{Method: "POST", Path: "/api/orders?page=2", Header: hdr}
	b.ReportAllocs()
	for b.Loop() {
		if a, _ := p.Evaluate(r); a != Hold {
			b.Fatal(a)
		}
	}
}
