package envoy

import (
	"maps"
	"testing"
)

// clustersJSON has the shape of Envoy 1.40's GET /clusters?format=json:
// proto3 JSON of envoy.admin.v3.Clusters (uint64 values as strings, zero
// values omitted).
const clustersJSON = `{"cluster_statuses":[
 {"name":"rev_local_a","added_via_api":true,"host_statuses":[
  {"address":{"socket_address":{"address":"127.0.0.1","port_value":4001}},
   "stats":[{"name":"cx_connect_fail"},{"value":"2","name":"cx_total"},{"value":"3","name":"rq_active","type":"GAUGE"},{"value":"2","name":"cx_active","type":"GAUGE"}],
   "health_status":{"eds_health_status":"HEALTHY"},"weight":1},
  {"address":{"socket_address":{"address":"127.0.0.1","port_value":4002}},
   "stats":[{"name":"rq_active","type":"GAUGE"},{"value":"1","name":"cx_active","type":"GAUGE"}]}]},
 {"name":"thaw_activator_dst","added_via_api":true,"host_statuses":[
  {"address":{"socket_address":{"address":"127.0.0.1","port_value":4001}},
   "stats":[{"value":"1","name":"rq_active","type":"GAUGE"},{"value":"1","name":"cx_active","type":"GAUGE"}]},
  {"address":{"envoy_internal_address":{"server_listener_name":"thaw_activator"}},
   "stats":[{"value":"9","name":"rq_active","type":"GAUGE"}]}]},
 {"name":"rev_local_b","host_statuses":[
  {"address":{"socket_address":{"address":"127.0.0.1","port_value":4009}},
   "stats":[{"value":"7","name":"rq_active","type":"GAUGE"}]}]},
 {"name":"thaw_xds","host_statuses":[]}]}`

func TestParseHostLoads(t *testing.T) {
	got, err := ParseHostLoads([]byte(clustersJSON), "rev_local_a", "thaw_activator_dst")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]HostLoad{
		"127.0.0.1:4001": {RequestsActive: 4, ConnectionsActive: 3},
		"127.0.0.1:4002": {ConnectionsActive: 1},
	}
	if !maps.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	all, err := ParseHostLoads([]byte(clustersJSON))
	if err != nil {
		t.Fatal(err)
	}
	if all["127.0.0.1:4009"].RequestsActive != 7 {
		t.Errorf("all clusters: %v, want 127.0.0.1:4009 with 7 requests", all)
	}
	if _, err := ParseHostLoads([]byte(`{"cluster_statuses": 3}`)); err == nil {
		t.Error("a malformed body: want an error")
	}
}

func TestClustersPath(t *testing.T) {
	tests := []struct {
		clusters []string
		want     string
	}{
		{nil, "/clusters?format=json"},
		{[]string{"rev_local_a"}, "/clusters?format=json&filter=%5E%28rev_local_a%29%24"},
		// Regex metacharacters in a name are matched literally.
		{[]string{"rev_a.b", "thaw_activator_dst"}, "/clusters?format=json&filter=%5E%28rev_a%5C.b%7Cthaw_activator_dst%29%24"},
	}
	for _, tt := range tests {
		if got := ClustersPath(tt.clusters...); got != tt.want {
			t.Errorf("ClustersPath(%q) = %q, want %q", tt.clusters, got, tt.want)
		}
	}
}
