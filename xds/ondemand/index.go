package ondemand

import (
	"strings"
	"sync"

	"google.golang.org/protobuf/encoding/protowire"
)

// Index maps request hosts to virtual host resource names the way Envoy
// picks a virtual host (route.v3.VirtualHost.domains): an exact domain
// first, then the longest "*suffix" wildcard (the "*" matching at least
// one character), then the longest "prefix*" wildcard, then "*". Domains
// and hosts compare in ASCII lower case; a host's ":port" and trailing dot
// are ignored (thaw_http strips both before matching). Safe for
// concurrent use.
type Index struct {
	mu       sync.RWMutex
	exact    map[string]string
	suffixes map[string]string // "*.example.com" → ".example.com"
	prefixes map[string]string // "www.*" → "www."
	any      string            // the virtual host with domain "*", if any
	// n counts the virtual hosts indexed. The index keeps no copy of a
	// host's domains (that copy was 7.5 of 15.6 MiB at 100,000 hosts,
	// BenchmarkIndexLiveHeap100k): Set and Delete are handed the encoding
	// that was indexed, and parse it again.
	n int
}

// NewIndex returns an empty index.
func NewIndex() *Index {
	return &Index{exact: map[string]string{}, suffixes: map[string]string{}, prefixes: map[string]string{}}
}

// Set indexes virtual host name with its encoding (a marshalled
// route.v3.VirtualHost: only its domains, field 2, are read), replacing
// old, the encoding name was last indexed with (nil: name is new). A
// domain already claimed by another virtual host keeps its first owner
// (thaw's translation never sends duplicates: Envoy would reject them).
func (x *Index) Set(name string, old, encoded []byte) {
	domains := Domains(encoded)
	x.mu.Lock()
	defer x.mu.Unlock()
	if old != nil {
		x.deleteLocked(name, old)
	} else {
		x.n++
	}
	for _, d := range domains {
		m, key := x.slot(d)
		if m == nil {
			if x.any == "" {
				x.any = name
			}
			continue
		}
		if _, taken := m[key]; !taken {
			m[key] = name
		}
	}
}

// Delete forgets virtual host name, last indexed with encoding old.
func (x *Index) Delete(name string, old []byte) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.deleteLocked(name, old)
	x.n--
}

// deleteLocked drops the domains of old that name owns.
func (x *Index) deleteLocked(name string, old []byte) {
	for _, d := range Domains(old) {
		m, key := x.slot(d)
		if m == nil {
			if x.any == name {
				x.any = ""
			}
			continue
		}
		if m[key] == name {
			delete(m, key)
		}
	}
}

// slot returns the map and key a domain is indexed under; nil for "*".
func (x *Index) slot(domain string) (map[string]string, string) {
	d := lower(domain)
	switch {
	case d == "*":
		return nil, ""
	case strings.HasPrefix(d, "*"):
		return x.suffixes, d[1:]
	case strings.HasSuffix(d, "*"):
		return x.prefixes, d[:len(d)-1]
	default:
		return x.exact, d
	}
}

// Resolve returns the virtual host a request for host would match, or ok
// false when none would.
func (x *Index) Resolve(host string) (name string, ok bool) {
	h := NormalizeHost(host)
	if h == "" {
		return "", false
	}
	x.mu.RLock()
	defer x.mu.RUnlock()
	if n, ok := x.exact[h]; ok {
		return n, true
	}
	// Longest suffix first: the wildcard matches h[:i], at least one byte.
	for i := 1; i < len(h); i++ {
		if n, ok := x.suffixes[h[i:]]; ok {
			return n, true
		}
	}
	for i := len(h) - 1; i >= 1; i-- {
		if n, ok := x.prefixes[h[:i]]; ok {
			return n, true
		}
	}
	if x.any != "" {
		return x.any, true
	}
	return "", false
}

// Len returns the number of virtual hosts indexed.
func (x *Index) Len() int {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return x.n
}

// NormalizeHost returns host in ASCII lower case without a ":port" suffix
// (also after a bracketed IPv6 address) and without a trailing dot; ""
// for an empty host.
func NormalizeHost(host string) string {
	h := host
	if strings.HasPrefix(h, "[") {
		if end := strings.IndexByte(h, ']'); end > 0 {
			h = h[:end+1]
		}
	} else if i := strings.LastIndexByte(h, ':'); i >= 0 && strings.IndexByte(h, ':') == i && isDigits(h[i+1:]) {
		h = h[:i]
	}
	h = strings.TrimSuffix(h, ".")
	return lower(h)
}

func isDigits(s string) bool {
	if s == "" || len(s) > 5 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// lower lowers ASCII letters only (Envoy compares domains that way),
// without allocating when s has none.
func lower(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= 'A' && c <= 'Z' {
			b := []byte(s)
			for j := i; j < len(b); j++ {
				if b[j] >= 'A' && b[j] <= 'Z' {
					b[j] += 'a' - 'A'
				}
			}
			return string(b)
		}
	}
	return s
}

// Domains returns the domains (field 2) of a marshalled
// route.v3.VirtualHost, skipping every other field; nil for a malformed
// encoding.
func Domains(b []byte) []string {
	var out []string
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return nil
		}
		b = b[n:]
		if num == 2 && typ == protowire.BytesType {
			v, m := protowire.ConsumeBytes(b)
			if m < 0 {
				return nil
			}
			out = append(out, string(v))
			b = b[m:]
			continue
		}
		m := protowire.ConsumeFieldValue(num, typ, b)
		if m < 0 {
			return nil
		}
		b = b[m:]
	}
	return out
}
