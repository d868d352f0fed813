package local

import (
	"slices"
	"testing"
)

func TestStopBefore(t *testing.T) {
	type c = stopCandidate
	tests := []struct {
		name string
		in   []c
		want []int // seqs in stop order
	}{
		{"not ready first", []c{{ready: true, seq: 1}, {ready: false, seq: 2, inFlight: 5}}, []int{2, 1}},
		{"least busy first", []c{{ready: true, seq: 3, inFlight: 1}, {ready: true, seq: 1}, {ready: true, seq: 2, inFlight: 4}}, []int{1, 3, 2}},
		{"newest first on a tie", []c{{ready: true, seq: 1}, {ready: true, seq: 3}, {ready: true, seq: 2}}, []int{3, 2, 1}},
		{"busy newest kept", []c{{ready: true, seq: 1}, {ready: true, seq: 2, inFlight: 1}}, []int{1, 2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := slices.Clone(tt.in)
			slices.SortStableFunc(got, stopBefore)
			var seqs []int
			for _, x := range got {
				seqs = append(seqs, x.seq)
			}
			if !slices.Equal(seqs, tt.want) {
				t.Errorf("stop order %v, want %v", seqs, tt.want)
			}
		})
	}
}
