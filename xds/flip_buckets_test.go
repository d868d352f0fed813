package xds

import (
	"slices"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// TestFlipBuckets checks the flip-to-ACK buckets' resolution around the
// 10 ms target and that every doubling bound they had before is kept (no
// `le` series goes away).
func TestFlipBuckets(t *testing.T) {
	for i := 1; i < len(flipBuckets); i++ {
		lo, hi := flipBuckets[i-1], flipBuckets[i]
		if hi <= lo {
			t.Fatalf("bucket %d: %v after %v, want increasing", i, hi, lo)
		}
		switch {
		case hi <= 0.010+1e-9 && hi-lo > 0.001+1e-9:
			t.Errorf("bucket (%v, %v]: wider than 1 ms below 10 ms", lo, hi)
		case hi <= 0.020+1e-9 && hi-lo > 0.002+1e-9:
			t.Errorf("bucket (%v, %v]: wider than 2 ms below 20 ms", lo, hi)
		}
	}
	for _, old := range prometheus.ExponentialBuckets(0.0005, 2, 16) {
		if !slices.Contains(flipBuckets, old) {
			t.Errorf("bound %v of the doubling buckets is gone", old)
		}
	}
}
