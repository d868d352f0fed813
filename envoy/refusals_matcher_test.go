package envoy

import (
	"os"
	"strings"
	"testing"
)

// TestRefusalCountersKeptByStatsMatcher: every counter the refusals
// collector reads is on the inclusion list of each bootstrap's stats
// matcher (thaw local's stats-sink.yaml and the fleet's manifests), or
// Envoy never creates it and the collector reads nothing. no_route is the
// one that counts the unknown-host 404 with --on-demand-hosts (no catch-all).
func TestRefusalCountersKeptByStatsMatcher(t *testing.T) {
	files := []string{
		"stats-sink.yaml",
		"../manifests/base/envoy/bootstrap.yaml",
		"../manifests/components/activator-module/envoy/bootstrap.yaml",
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range RefusalCounters {
			if !strings.Contains(string(b), "- exact: "+refusalPrefix+name+"\n") {
				t.Errorf("%s: stats matcher does not keep %s%s", f, refusalPrefix, name)
			}
		}
	}
}
