package revision

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

// FuzzParseSettings parses two arbitrary settings (key and value as an
// annotation or a local YAML key may carry them) onto a valid spec with
// arbitrary comma-separated hosts, under an arbitrary hold budget. Every
// error must wrap ErrInvalidSpec; an accepted spec must validate, keep its
// hosts in normal form and be a fixed point (parsing the same settings onto
// it again changes nothing). `go test` runs only the seeds.
func FuzzParseSettings(f *testing.F) {
	f.Add("hello.example.com", KeyMaxScale, "4294967297", KeyTarget, "Inf", int64(0))
	f.Add("DUP.localhost,dup.localhost.", ThawPrefix+KeyMinScale, "2147483648", KnativePrefix+"maxScale", "5", int64(0))
	f.Add("a.localhost:8080", KeyHoldTimeout, "90s", KeyWindow, "1e300", int64(30*time.Second))
	f.Add("*.Apps.example.com", KeyScaleDownDelay, "+Infinity", KeyTargetBurstCapacity, "-1", int64(time.Hour))
	f.Add("x", ThawPrefix+"tagret", "1", KnativePrefix+"class", "kpa", int64(-1))
	f.Add("a.b", KeyMetric, "RPS", KeyContainerConcurrency, " 7 ", int64(2*time.Second))
	f.Fuzz(func(t *testing.T, hosts, k1, v1, k2, v2 string, budget int64) {
		base := validSpec()
		base.Hosts = strings.Split(hosts, ",")
		lim := Limits{HoldBudget: time.Duration(budget)}
		settings := map[string]string{k1: v1, k2: v2}
		spec, err := ParseSettingsWithin(base, settings, lim)
		if err != nil {
			for _, e := range unjoin(err) {
				if !errors.Is(e, ErrInvalidSpec) {
					t.Fatalf("error %v does not wrap ErrInvalidSpec", e)
				}
			}
			return
		}
		if verr := spec.ValidateWithin(lim); verr != nil {
			t.Fatalf("accepted spec does not validate: %v", verr)
		}
		if lim.HoldBudget > 0 && spec.HoldTimeout > lim.HoldBudget {
			t.Fatalf("hold-timeout %v above the budget %v", spec.HoldTimeout, lim.HoldBudget)
		}
		for _, h := range spec.Hosts {
			if NormalizeHost(h) != h || checkHost(h) != "" {
				t.Fatalf("host %q not in valid normal form", h)
			}
		}
		again, err := ParseSettingsWithin(spec, settings, lim)
		if err != nil || !reflect.DeepEqual(again, spec) {
			t.Fatalf("not a fixed point: %+v, %v; first %+v", again, err, spec)
		}
	})
}

// FuzzNormalizeHost: the normal form of a host that validates is stable,
// has no upper-case ASCII letter, port or trailing dot, and does not depend
// on the case of ASCII letters. `go test` runs only the seeds.
func FuzzNormalizeHost(f *testing.F) {
	for _, h := range []string{"hello.example.com", "DUP.localhost", "a.b.:8080", "*.X.io", "[::1]:80", "a:1:2", "\u212a.com", "a.b:", ""} {
		f.Add(h)
	}
	f.Fuzz(func(t *testing.T, h string) {
		n := NormalizeHost(h)
		if checkHost(n) != "" {
			return
		}
		if NormalizeHost(n) != n {
			t.Fatalf("NormalizeHost(%q) = %q, but NormalizeHost(%q) = %q", h, n, n, NormalizeHost(n))
		}
		if strings.ContainsAny(n, "ABCDEFGHIJKLMNOPQRSTUVWXYZ:") || strings.HasSuffix(n, ".") {
			t.Fatalf("NormalizeHost(%q) = %q, not in normal form", h, n)
		}
		upper := strings.Map(func(r rune) rune {
			if 'a' <= r && r <= 'z' {
				return r - ('a' - 'A')
			}
			return r
		}, h)
		if NormalizeHost(upper) != n {
			t.Fatalf("NormalizeHost(%q) = %q, but NormalizeHost(%q) = %q", upper, NormalizeHost(upper), h, n)
		}
	})
}
