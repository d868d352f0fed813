package ack

import (
	"testing"
	"time"

	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
)

// TestAllAckedWithParent: a stream that ACKed a revision's new cluster
// but has not asked for any ClusterLoadAssignment yet (Envoy subscribes
// while it warms the cluster, possibly after the cluster's ACK) is waited
// for by AllAckedWithParent, while AllAcked skips it; a stream without
// the cluster is not waited for by either.
func TestAllAckedWithParent(t *testing.T) {
	const name, version = "rev_default_a", "v1"
	want := map[string]string{name: version}
	now := time.Now()
	tests := []struct {
		name                 string
		cluster, assignment  bool // the stream ACKed the cluster / the assignment
		allAcked, withParent bool
	}{
		{"no cluster, no assignment", false, false, true, true},
		{"cluster ACKed, assignment not asked for yet", true, false, true, false},
		{"cluster and assignment ACKed", true, true, true, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tr := NewTracker()
			k := StreamKey{Delta: true, ID: 1}
			tr.Open(k, false, now, nil)
			if tc.cluster {
				tr.Sent(k, "c1", &Response{TypeURL: resourcev3.ClusterType, Names: []string{name}, Versions: []string{"c"}, SentAt: now})
				tr.Ack(k, "c1", now)
			}
			if tc.assignment {
				tr.Sent(k, "e1", &Response{TypeURL: resourcev3.EndpointType, Names: []string{name}, Versions: []string{version}, SentAt: now})
				tr.Ack(k, "e1", now)
			}
			if got := tr.AllAcked(resourcev3.EndpointType, want); got != tc.allAcked {
				t.Errorf("AllAcked = %v, want %v", got, tc.allAcked)
			}
			if got := tr.AllAckedWithParent(resourcev3.EndpointType, want, resourcev3.ClusterType); got != tc.withParent {
				t.Errorf("AllAckedWithParent = %v, want %v", got, tc.withParent)
			}
		})
	}
}

// TestHeldAnywhere: a resource is held from the response that carries it
// until the ACK of its removal (the removal in flight still counts), and
// no longer once its stream closed.
func TestHeldAnywhere(t *testing.T) {
	const name = "rev_default_a"
	now := time.Now()
	tr := NewTracker()
	k := StreamKey{Delta: true, ID: 1}
	tr.Open(k, false, now, nil)
	held := func(want bool, when string) {
		t.Helper()
		if got := tr.HeldAnywhere(resourcev3.ClusterType, name); got != want {
			t.Errorf("%s: HeldAnywhere = %v, want %v", when, got, want)
		}
	}
	held(false, "never sent")
	tr.Sent(k, "c1", &Response{TypeURL: resourcev3.ClusterType, Names: []string{name}, Versions: []string{"c"}, SentAt: now})
	held(true, "sent, not ACKed")
	tr.Ack(k, "c1", now)
	held(true, "ACKed")
	if tr.HeldAnywhere(resourcev3.EndpointType, name) {
		t.Error("HeldAnywhere of another type = true")
	}
	tr.Sent(k, "c2", &Response{TypeURL: resourcev3.ClusterType, Removed: []string{name}, SentAt: now})
	held(true, "removal in flight")
	tr.Ack(k, "c2", now)
	held(false, "removal ACKed")

	tr.Sent(k, "c3", &Response{TypeURL: resourcev3.ClusterType, Names: []string{name}, Versions: []string{"c"}, SentAt: now})
	tr.Ack(k, "c3", now)
	tr.Close(k)
	held(false, "its only holder closed")
}
