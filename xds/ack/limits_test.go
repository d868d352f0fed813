package ack

import (
	"fmt"
	"testing"
	"time"

	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
)

// TestLargeResponseGetsMoreTime: a stream's ack allowance grows with the
// resources of its unanswered responses (Envoy answers only once it
// applied them all, in order), so a stream busy with the 100,000 clusters
// of an initial sync is not closed at the flat timeout, nor for the small
// response queued behind them, while small responses alone still are.
func TestLargeResponseGetsMoreTime(t *testing.T) {
	const timeout = 30 * time.Second
	names := make([]string, 100_000)
	for i := range names {
		names[i] = fmt.Sprintf("rev_default_%06d", i)
	}
	start := time.Now()
	tests := []struct {
		name    string
		names   []string
		after   time.Duration
		stalled bool
	}{
		{"small response just past the timeout", names[:3], timeout + 10*time.Millisecond, true},
		{"small response before the timeout", names[:3], timeout - time.Second, false},
		{"100k clusters at twice the timeout", names, 2 * timeout, false},
		{"100k clusters past their allowance", names, timeout + 100*time.Second + 100*time.Millisecond, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tr := NewTracker()
			k := StreamKey{Delta: true, ID: 1}
			tr.Open(k, false, start, nil)
			tr.streams[k].nodeID, tr.streams[k].answeredAt = "envoy", start
			tr.Sent(k, "n1", &Response{TypeURL: resourcev3.ClusterType, Names: tc.names, SentAt: start})
			// A small response queued behind it waits as long.
			tr.Sent(k, "n2", &Response{TypeURL: resourcev3.ListenerType, Names: []string{"thaw_http"}, SentAt: start.Add(time.Second)})
			got := tr.Stalled(start.Add(tc.after), timeout)
			if (len(got) == 1) != tc.stalled {
				t.Fatalf("stalled() after %v = %+v, want stalled %v", tc.after, got, tc.stalled)
			}
		})
	}
}
