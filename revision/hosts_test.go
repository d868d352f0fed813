package revision

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestNormalizeHost(t *testing.T) {
	tests := []struct{ in, want string }{
		{"hello.example.com", "hello.example.com"},
		{"DUP.localhost", "dup.localhost"},
		{"Hello.Example.COM.", "hello.example.com"},
		{"hello.localhost:8080", "hello.localhost"},
		{"HELLO.localhost.:80", "hello.localhost"},
		{"*.Example.com", "*.example.com"},
		{"a.b:", "a.b:"},             // no port digits: left, refused by validation
		{"a.b:123456", "a.b:123456"}, // not a port
		{"[::1]:80", "[::1]:80"},     // IPv6 literal: left, refused
		{"a:1:2", "a:1:2"},
		{"\u212a.com", "\u212a.com"}, // Kelvin sign: not folded to "k"
		{"bad host", "bad host"},
		{"", ""},
	}
	for _, tt := range tests {
		if got := NormalizeHost(tt.in); got != tt.want {
			t.Errorf("NormalizeHost(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestValidateComparesNormalHosts(t *testing.T) {
	tests := []struct {
		name  string
		hosts []string
		want  string // substring of the error; "" = valid
	}{
		{"case", []string{"dup.localhost", "DUP.localhost"}, `hosts: value "DUP.localhost" not allowed: want each host once ("dup.localhost" is the same host)`},
		{"trailing dot", []string{"a.example.com", "a.example.com."}, `value "a.example.com." not allowed: want each host once`},
		{"port", []string{"a.example.com", "A.example.com:8080"}, `value "A.example.com:8080" not allowed: want each host once`},
		{"bad port", []string{"a.example.com:http"}, `value "a.example.com:http" not allowed: want a DNS name`},
		{"non-ascii", []string{"\u212a.com"}, `want a DNS name`},
		{"double dot", []string{"a.b.."}, `want a DNS name`},
		{"distinct", []string{"a.example.com", "b.example.com:9090", "*.Example.com."}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := validSpec()
			s.Hosts = tt.hosts
			err := s.Validate()
			if tt.want == "" {
				if err != nil {
					t.Fatalf("Validate() = %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) || !errors.Is(err, ErrInvalidSpec) {
				t.Fatalf("Validate() = %v, want %q", err, tt.want)
			}
		})
	}
}

func TestParseSettingsNormalizesHosts(t *testing.T) {
	base := validSpec()
	base.Hosts = []string{"Hello.Example.com.", "api.example.com:8080", "*.Apps.example.com"}
	got, err := ParseSettings(base, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"hello.example.com", "api.example.com", "*.apps.example.com"}
	if !slices.Equal(got.Hosts, want) {
		t.Errorf("Hosts = %q, want %q", got.Hosts, want)
	}
	if base.Hosts[0] != "Hello.Example.com." {
		t.Errorf("base modified: %q", base.Hosts)
	}
}
