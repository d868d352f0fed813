package ondemand

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzResolve: any Host (client input) and any virtual host encoding
// never panic; a host equal to a domain some virtual host claims in other
// letter case and with a port resolves to a virtual host; resolving never
// indexes anything.
func FuzzResolve(f *testing.F) {
	f.Add("api.example.com:8080", "api.example.com", []byte{0x12, 0x03, 'a', 'b', 'c'})
	f.Add("x.y.example.com", "*.example.com", []byte{0xff})
	f.Add("[::1]:80", "www.*", []byte{})
	f.Fuzz(func(t *testing.T, host, domain string, raw []byte) {
		if !utf8.ValidString(domain) {
			return // not a valid proto string: no virtual host has it
		}
		x := NewIndex()
		x.Set("thaw_http/raw", nil, raw)
		x.Set("thaw_http/vh", nil, encodeVH(t, "vh", domain))
		before := x.Len()
		x.Resolve(host)
		if x.Len() != before {
			t.Fatalf("Resolve changed the index: %d → %d", before, x.Len())
		}
		if dnsLike(domain) {
			if _, ok := x.Resolve(strings.ToUpper(domain) + ":80"); !ok {
				t.Fatalf("domain %q (upper case, with a port) did not resolve", domain)
			}
		}
	})
}

// dnsLike reports whether d is made of ASCII letters, digits, '-' and
// inner dots only.
func dnsLike(d string) bool {
	if d == "" || strings.HasPrefix(d, ".") || strings.HasSuffix(d, ".") {
		return false
	}
	for i := 0; i < len(d); i++ {
		c := d[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '.') {
			return false
		}
	}
	return true
}
