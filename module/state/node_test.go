package state

import "testing"

func TestServiceNode(t *testing.T) {
	for _, tc := range []struct{ name, cmdline, want string }{
		{"equals form", "envoy\x00--config-path=/etc/envoy/b.yaml\x00--service-node=envoy-7c9-abc\x00--service-cluster=thaw\x00", "envoy-7c9-abc"},
		{"separate value", "envoy\x00--service-node\x00envoy-1\x00-l\x00info\x00", "envoy-1"},
		{"last one wins", "envoy\x00--service-node=a\x00--service-node\x00b\x00", "b"},
		{"flag without value", "envoy\x00--service-node\x00", ""},
		{"none", "envoy\x00--config-path\x00b.yaml\x00", ""},
		{"prefix of another flag", "envoy\x00--service-nodes=x\x00", ""},
		{"empty", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ServiceNode([]byte(tc.cmdline)); got != tc.want {
				t.Errorf("ServiceNode(%q) = %q, want %q", tc.cmdline, got, tc.want)
			}
		})
	}
}
