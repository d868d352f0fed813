package ondemand

import (
	"testing"
	"time"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	"google.golang.org/protobuf/proto"
)

func encodeVH(t testing.TB, name string, domains ...string) []byte {
	t.Helper()
	b, err := proto.Marshal(&routev3.VirtualHost{Name: name, Domains: domains,
		Routes: []*routev3.Route{{Name: "r"}}})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestIndexResolve(t *testing.T) {
	x := NewIndex()
	exact, wild := encodeVH(t, "exact", "api.example.com", "API2.Example.com"), encodeVH(t, "wild", "*.example.com")
	x.Set("thaw_http/exact", nil, exact)
	x.Set("thaw_http/wild", nil, wild)
	x.Set("thaw_http/deeper", nil, encodeVH(t, "deeper", "*.eu.example.com"))
	x.Set("thaw_http/dash", nil, encodeVH(t, "dash", "*-svc.example.org"))
	x.Set("thaw_http/prefix", nil, encodeVH(t, "prefix", "www.*"))
	for _, tc := range []struct {
		host, want string
	}{
		{"api.example.com", "thaw_http/exact"},
		{"API.EXAMPLE.COM", "thaw_http/exact"},      // case-insensitive
		{"api2.example.com", "thaw_http/exact"},     // a domain written in upper case
		{"api.example.com:8080", "thaw_http/exact"}, // port stripped
		{"api.example.com.", "thaw_http/exact"},     // trailing dot
		{"other.example.com", "thaw_http/wild"},     // *.suffix
		{"a.b.example.com", "thaw_http/wild"},       // the wildcard spans dots
		{"x.eu.example.com", "thaw_http/deeper"},    // the longest suffix wins
		{"eu.example.com", "thaw_http/wild"},        // *.eu.example.com needs one more byte
		{"my-svc.example.org", "thaw_http/dash"},    // *-suffix
		{"www.anything.net", "thaw_http/prefix"},    // prefix*
		{"www.api.example.com", "thaw_http/wild"},   // suffix before prefix, as Envoy
		{"example.com", ""},                         // "*.example.com" does not match its own suffix
		{".example.com", ""},                        // nor an empty wildcard part
		{"unknown.test", ""},
		{"", ""},
		{"[::1]:8080", ""},
	} {
		got, ok := x.Resolve(tc.host)
		if got != tc.want || ok != (tc.want != "") {
			t.Errorf("Resolve(%q) = %q, %v; want %q", tc.host, got, ok, tc.want)
		}
	}
	// Delete and replace forget the old domains.
	x.Set("thaw_http/exact", exact, encodeVH(t, "exact", "new.example.net"))
	if got, _ := x.Resolve("api.example.com"); got != "thaw_http/wild" {
		t.Errorf("after replace: api.example.com → %q, want the wildcard", got)
	}
	if got, _ := x.Resolve("new.example.net"); got != "thaw_http/exact" {
		t.Errorf("after replace: new.example.net → %q", got)
	}
	x.Delete("thaw_http/wild", wild)
	if got, ok := x.Resolve("other.example.com"); ok {
		t.Errorf("after delete: other.example.com → %q", got)
	}
	x.Set("thaw_http/any", nil, encodeVH(t, "any", "*"))
	if got, _ := x.Resolve("unknown.test"); got != "thaw_http/any" {
		t.Errorf(`"*" catch-all: %q`, got)
	}
	if x.Len() != 5 {
		t.Errorf("Len = %d, want 5", x.Len())
	}
}

func TestIndexKeepsFirstOwner(t *testing.T) {
	x := NewIndex()
	b := encodeVH(t, "b", "h.example.com")
	x.Set("thaw_http/a", nil, encodeVH(t, "a", "h.example.com"))
	x.Set("thaw_http/b", nil, b)
	if got, _ := x.Resolve("h.example.com"); got != "thaw_http/a" {
		t.Fatalf("duplicate domain → %q, want the first owner", got)
	}
	x.Delete("thaw_http/b", b) // must not take a's domain with it
	if got, _ := x.Resolve("h.example.com"); got != "thaw_http/a" {
		t.Fatalf("after deleting the second claimant → %q", got)
	}
}

func TestDomainsMalformed(t *testing.T) {
	if d := Domains([]byte{0x12, 0x05, 'a'}); d != nil {
		t.Fatalf("truncated encoding: %v, want nil", d)
	}
}

func TestPolicyResidency(t *testing.T) {
	p := NewPolicy("thaw_http", time.Minute)
	p.Set("thaw_http/a", nil, encodeVH(t, "a", "a.example.com"))
	if n, ok := p.Resolve("thaw_http/A.example.com"); !ok || n != "thaw_http/a" {
		t.Fatalf("Resolve = %q, %v", n, ok)
	}
	if _, ok := p.Resolve("other/a.example.com"); ok {
		t.Fatal("another route configuration's alias resolved")
	}
	t0 := time.Unix(0, 0)
	if added := p.SetAwake(map[string]bool{"thaw_http/a": true}, t0); len(added) != 1 || !p.Resident("thaw_http/a") {
		t.Fatalf("awake: added %v resident %v", added, p.Resident("thaw_http/a"))
	}
	if added := p.SetAwake(map[string]bool{"thaw_http/a": true}, t0); len(added) != 0 {
		t.Fatalf("awake again: added %v, want none", added)
	}
	p.SetAwake(nil, t0.Add(time.Second)) // back to zero
	if gone := p.Expire(t0.Add(30 * time.Second)); len(gone) != 0 || !p.Resident("thaw_http/a") {
		t.Fatalf("before EvictAfter: gone %v", gone)
	}
	if gone := p.Expire(t0.Add(61 * time.Second)); len(gone) != 1 || p.Resident("thaw_http/a") {
		t.Fatalf("after EvictAfter: gone %v resident %v", gone, p.Resident("thaw_http/a"))
	}
	// Awake again before its time ran out: it stays, with no expiry.
	p.SetAwake(map[string]bool{"thaw_http/a": true}, t0)
	p.SetAwake(nil, t0.Add(time.Second))
	p.SetAwake(map[string]bool{"thaw_http/a": true}, t0.Add(2*time.Second))
	if gone := p.Expire(t0.Add(time.Hour)); len(gone) != 0 {
		t.Fatalf("awake host expired: %v", gone)
	}
}
