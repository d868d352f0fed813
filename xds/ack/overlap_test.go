package ack

import (
	"testing"
	"time"

	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
)

// TestAckedByOverlappingNonces: a node ACKs the same assignment twice
// (nonce 6, then the repeat nonce 7 sent before the first ACK arrived,
// as after an EDS re-subscribe). AckedBy is false while nonce 7 is in
// flight and true once it is ACKed.
func TestAckedByOverlappingNonces(t *testing.T) {
	const name, version, node = "rev_default_a", "v1", "envoy-1"
	now := time.Now()
	tr := NewTracker()
	k := StreamKey{Delta: true, ID: 2}
	tr.Open(k, false, now, nil)
	if _, _, ok := tr.ClaimNode(k, node, "test", 10, 10, 10); !ok {
		t.Fatal("ClaimNode refused the stream")
	}
	sent := func(nonce string) {
		tr.Sent(k, nonce, &Response{TypeURL: resourcev3.EndpointType, Names: []string{name}, Versions: []string{version}, SentAt: now})
	}
	check := func(when string, want bool) {
		t.Helper()
		if got := tr.AckedBy(node, resourcev3.EndpointType, name, version); got != want {
			t.Errorf("%s: AckedBy = %v, want %v", when, got, want)
		}
	}
	sent("6")
	sent("7")
	check("both in flight", false)
	tr.Ack(k, "6", now)
	check("6 ACKed, 7 in flight", false)
	tr.Ack(k, "7", now)
	check("both ACKed", true)
	tr.Ack(k, "7", now) // a repeated ACK of a settled nonce changes nothing
	check("7 ACKed twice", true)
}
