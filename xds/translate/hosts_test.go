package translate

import (
	"errors"
	"testing"

	"github.com/thaw-dev/thaw/revision"
)

// TestTranslateComparesNormalHosts: hosts that differ only in case, a
// trailing dot or a port are one host for Envoy, so translation compares
// them in revision.NormalizeHost form, as validation does.
func TestTranslateComparesNormalHosts(t *testing.T) {
	snap := snapshotOf(
		rev("a", "first", revision.ModeServe, []string{"dup.example.com."}),
		rev("b", "second", revision.ModeServe, []string{"DUP.example.com:8080"}),
	)
	res, err := Translate(snap, testConfig())
	var hc *HostCollisionError
	if !errors.As(err, &hc) || hc.Host != "dup.example.com" || hc.Skipped.Name != "second" {
		t.Fatalf("error = %v, want a collision on dup.example.com skipping b/second", err)
	}
	vhosts := virtualHosts(res)
	for _, vh := range vhosts {
		for _, d := range vh.GetDomains() {
			if d == "dup.example.com." || d == "DUP.example.com:8080" {
				t.Errorf("virtual host %s has domain %q, want the normal form", vh.GetName(), d)
			}
		}
	}
}
