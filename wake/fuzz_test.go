package wake

import (
	"encoding/json"
	"testing"
	"time"
)

// FuzzPolicy: any JSON wake block either compiles or is refused with
// errors, never panics; a compiled policy evaluates any request and any
// time without panicking, and evaluation is deterministic.
func FuzzPolicy(f *testing.F) {
	f.Add([]byte(`{"rules":[{"name":"p","userAgent":"kube-probe/.*","response":{"status":200,"body":"ok"}}],"waitingPage":{}}`),
		"GET", "/healthz?x=1", "kube-probe/1.37", "text/html", int64(0))
	f.Add([]byte(`{"schedule":[{"name":"w","start":"0 8 * * 1-5","duration":"10h","timeZone":"Europe/Paris","minScale":2}]}`),
		"POST", "/", "", "", int64(1795720000))
	f.Add([]byte(`{"rules":[{"name":"h","headers":{"x-a":"(a|b)+"}}]}`), "HEAD", "", "curl", "*/*", int64(-1))
	f.Fuzz(func(t *testing.T, cfg []byte, method, path, ua, accept string, unix int64) {
		var c Config
		if json.Unmarshal(cfg, &c) != nil {
			return
		}
		p, errs := Compile(&c)
		if p == nil {
			if len(errs) == 0 && !c.IsZero() {
				t.Fatalf("no policy and no error for %s", cfg)
			}
			return
		}
		if len(errs) != 0 {
			t.Fatalf("a policy and errors %v", errs)
		}
		hdr := func(name string) (string, bool) {
			switch name {
			case "user-agent":
				return ua, ua != ""
			case "accept":
				return accept, accept != ""
			}
			return "", false
		}
		r := Request{Method: method, Path: path, Header: hdr}
		a1, r1 := p.Evaluate(r)
		a2, r2 := p.Evaluate(r)
		if a1 != a2 || r1 != r2 {
			t.Fatalf("Evaluate not deterministic")
		}
		now := time.Unix(unix%(1<<40), 0)
		_ = p.MinScaleAt(now)
		if next := p.NextChange(now); !next.IsZero() && !next.After(now) {
			t.Fatalf("NextChange %v not after %v", next, now)
		}
	})
}
