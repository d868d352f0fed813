package activator

import (
	"testing"
)

func throttlerWith(cc int, loads ...int64) *throttler {
	t := newThrottler(demo, limits{containerConcurrency: cc, holdTimeout: 1, queueDepth: 10})
	st := &tstate{limits: t.state.Load().limits}
	for i, l := range loads {
		p := newPodTracker(string(rune('a' + i)))
		p.inFlight.Store(l)
		st.pods = append(st.pods, p)
	}
	t.state.Store(st)
	return t
}

func TestPickLeastLoaded(t *testing.T) {
	tests := []struct {
		name  string
		cc    int
		loads []int64
		want  string // "" = no capacity
	}{
		{"no pods", 0, nil, ""},
		{"one pod unlimited", 0, []int64{50}, "a"},
		{"least loaded", 0, []int64{3, 1, 2}, "b"},
		{"least loaded with limit", 4, []int64{3, 2, 4}, "b"},
		{"all full", 2, []int64{2, 2}, ""},
		{"only free one", 1, []int64{1, 0, 1}, "b"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			th := throttlerWith(tc.cc, tc.loads...)
			p := th.pick()
			got := ""
			if p != nil {
				got = p.addr
			}
			if got != tc.want {
				t.Fatalf("pick() = %q, want %q", got, tc.want)
			}
			if p != nil {
				idx := int(p.addr[0] - 'a')
				if n := p.inFlight.Load(); n != tc.loads[idx]+1 {
					t.Errorf("in flight on %s = %d, want %d (one reserved)", p.addr, n, tc.loads[idx]+1)
				}
			}
		})
	}
}

// Equal loads are served in rotation, not always by the first pod.
func TestPickRoundRobinOnTies(t *testing.T) {
	th := throttlerWith(0, 0, 0, 0)
	seen := map[string]int{}
	for i := 0; i < 30; i++ {
		p := th.pick()
		seen[p.addr]++
		p.release() // keep loads equal
	}
	for _, a := range []string{"a", "b", "c"} {
		if seen[a] != 10 {
			t.Errorf("pod %s picked %d times in 30 picks over 3 idle pods, want 10 (%v)", a, seen[a], seen)
		}
	}
}

// Filling every slot yields exactly sum(containerConcurrency) reservations.
func TestPickCapacityIsSumOfPods(t *testing.T) {
	th := throttlerWith(3, 0, 0, 0, 0)
	n := 0
	for th.pick() != nil {
		n++
		if n > 100 {
			t.Fatal("pick never ran out of capacity")
		}
	}
	if n != 12 {
		t.Fatalf("reserved %d slots, want 4 pods × 3 = 12", n)
	}
	for _, p := range th.state.Load().pods {
		if got := p.inFlight.Load(); got != 3 {
			t.Errorf("pod %s in flight %d, want 3", p.addr, got)
		}
	}
}
