package statsink

import (
	"encoding/base32"
	"strings"
	"testing"

	"github.com/thaw-dev/thaw/revision"
)

// TestClusterNameRoundTrip covers revision.ClusterName and
// revision.RevisionFromCluster (revision/cluster.go), which the xds
// translator and this sink must agree on.
func TestClusterNameRoundTrip(t *testing.T) {
	tests := []struct {
		key  revision.Key
		want string // "" = encoded form, only checked for round trip and no '.'
	}{
		{key: revision.Key{Namespace: "default", Name: "demo"}, want: "rev_default_demo"},
		{key: revision.Key{Namespace: "team-a", Name: "web-api"}, want: "rev_team-a_web-api"},
		{key: revision.Key{Namespace: "ns", Name: "web.v2.canary"}, want: "rev_ns_web_v2_canary"},
		{key: revision.Key{Namespace: "local", Name: "My_App"}},
		{key: revision.Key{Namespace: "local", Name: "a_b"}},
		{key: revision.Key{Namespace: "dotted.ns", Name: "x"}},
		{key: revision.Key{Namespace: "ns", Name: "a..b"}},
		{key: revision.Key{Namespace: "UPPER", Name: "x"}},
		{key: revision.Key{Namespace: "ns", Name: "slash/y"}},
	}
	for _, tc := range tests {
		name := revision.ClusterName(tc.key)
		if tc.want != "" && name != tc.want {
			t.Errorf("ClusterName(%v) = %q, want %q", tc.key, name, tc.want)
		}
		if strings.ContainsAny(name, "./") {
			t.Errorf("ClusterName(%v) = %q contains '.' or '/'", tc.key, name)
		}
		got, ok := revision.RevisionFromCluster(name)
		if !ok || got != tc.key {
			t.Errorf("RevisionFromCluster(%q) = %v, %v; want %v, true", name, got, ok, tc.key)
		}
	}
}

var b32hex = base32.NewEncoding("0123456789abcdefghijklmnopqrstuv").WithPadding(base32.NoPadding)

func TestRevisionFromClusterRejects(t *testing.T) {
	for _, name := range []string{
		"", "thaw_xds", "thaw_activator_dst", "rev_", "rev_default", "rev__demo", "rev_default_",
		"rev_default_a__b", "rev_Default_demo", "rev_default_-demo", "revx_", "revx_zz_zz",
		// Decodes to default/demo, a plain key: ClusterName never makes it.
		"revx_" + b32hex.EncodeToString([]byte("default")) + "_" + b32hex.EncodeToString([]byte("demo")),
		"cluster.rev_default_demo",
	} {
		if key, ok := revision.RevisionFromCluster(name); ok {
			t.Errorf("RevisionFromCluster(%q) = %v, true; want false", name, key)
		}
	}
}
