package main

import (
	"slices"
	"testing"
)

func TestClusterHosts(t *testing.T) {
	body := []byte(`rev_local_burst::observability_name::rev_local_burst
rev_local_burst::default_priority::max_connections::1024
rev_local_burst::127.0.0.1:42851::cx_active::3
rev_local_burst::127.0.0.1:42851::rq_active::0
rev_local_burst::127.0.0.1:38495::rq_active::1
rev_local_burster::127.0.0.1:9999::rq_active::1
thaw_extproc::127.0.0.1:21327::rq_active::0
`)
	got := clusterHosts(body, "rev_local_burst")
	want := []string{"127.0.0.1:38495", "127.0.0.1:42851"}
	if !slices.Equal(got, want) {
		t.Errorf("clusterHosts = %v, want %v", got, want)
	}
	if got := clusterHosts(body, "rev_local_none"); len(got) != 0 {
		t.Errorf("clusterHosts of a missing cluster = %v, want none", got)
	}
}
