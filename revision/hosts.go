package revision

import (
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// NormalizeHost returns the form of an HTTP host that thaw validates,
// compares and routes on: ASCII letters in lower case, without a port
// suffix (":8080") and without the trailing dot of a fully qualified name
// ("example.com." → "example.com"). Host names are case-insensitive and
// Envoy's listener strips the port from the request's Host before matching
// (strip_any_host_port), so two hosts with the same normal form claim the
// same traffic: duplicate detection and the xds translation both compare
// normal forms.
//
// It does not validate: a host that is not a DNS name stays invalid ("bad
// host" → "bad host"), and non-ASCII letters are left as written so that
// validation refuses them (strings.ToLower would turn the Kelvin sign into
// "k"). For a host that is valid after normalisation,
// NormalizeHost(NormalizeHost(h)) == NormalizeHost(h).
func NormalizeHost(h string) string {
	if i := strings.LastIndexByte(h, ':'); i >= 0 && isPort(h[i+1:]) && !strings.Contains(h[:i], ":") {
		h = h[:i]
	}
	h = strings.TrimSuffix(h, ".")
	for i := 0; i < len(h); i++ {
		if c := h[i]; 'A' <= c && c <= 'Z' {
			return asciiLower(h)
		}
	}
	return h
}

// isPort reports whether s is a decimal TCP port (1 to 5 digits).
func isPort(s string) bool {
	if len(s) == 0 || len(s) > 5 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

func asciiLower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + ('a' - 'A')
		}
	}
	return string(b)
}

// checkHost returns "" for a valid host in normal form (see NormalizeHost):
// a DNS-1123 subdomain, optionally prefixed with "*." (a wildcard), else what
// is wanted instead.
func checkHost(h string) string {
	name := strings.TrimPrefix(h, "*.")
	if name == "" || strings.ContainsAny(name, ":/ ") {
		return "a DNS name, optionally prefixed with *. (a port suffix such as :8080 is dropped)"
	}
	if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
		return "a DNS name, optionally prefixed with *. (" + errs[0] + ")"
	}
	return ""
}
