package autoscaler

import (
	"testing"
	"time"

	"github.com/thaw-dev/thaw/revision"
	"github.com/thaw-dev/thaw/wake"
)

// TestGateWarmWindow: an open warm window raises the minimum scale of an
// idle revision at zero; once it closes the revision may go back to zero
// through the usual idle and grace periods.
func TestGateWarmWindow(t *testing.T) {
	pol, errs := wake.Compile(&wake.Config{Schedule: []wake.WindowConfig{
		{Name: "office", Start: "0 8 * * *", Duration: "10h", MinScale: 2},
	}})
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	spec := gateSpec(func(s *revision.Spec) { s.Wake = pol })
	day := time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC)
	at := func(h, m int) time.Time { return day.Add(time.Duration(h)*time.Hour + time.Duration(m)*time.Minute) }
	g := NewGate(at(7, 0))
	steps := []struct {
		now            time.Time
		current, ready int32
		proxySince     time.Time
		wantDesired    int32
		wantZero       bool
	}{
		{now: at(7, 59), wantDesired: 0, wantZero: true},
		{now: at(8, 0), wantDesired: 2},
		{now: at(12, 0), current: 2, ready: 2, wantDesired: 2},
		{now: at(17, 59), current: 2, ready: 2, wantDesired: 2},
		// Closed: the decider recommends 0 (idle), so the revision goes to
		// proxy mode, one pod held until every Envoy confirmed it.
		{now: at(18, 0), current: 2, ready: 2, wantDesired: 1, wantZero: true},
		{now: at(18, 2), current: 2, ready: 2, proxySince: at(18, 1), wantDesired: 0, wantZero: true},
	}
	for i, s := range steps {
		out := g.Decide(GateInput{Now: s.now, Spec: &spec, Result: Result{ScaleValid: true}, Current: s.current, Ready: s.ready,
			EnableScaleToZero: true, ProxyConfirmed: !s.proxySince.IsZero(), ProxySince: s.proxySince})
		if out.Desired != s.wantDesired || out.WantZero != s.wantZero {
			t.Fatalf("step %d at %s: desired %d wantZero %v (%s); want %d %v", i, s.now.Format("15:04"), out.Desired, out.WantZero,
				out.Reason, s.wantDesired, s.wantZero)
		}
	}
}

// TestGateWakeRulesNeedPoke: at zero, load Envoy counted (requests a wake
// rule answered) does not wake a revision with a wake policy; a poke does.
// Without a policy the same load wakes it as before.
func TestGateWakeRulesNeedPoke(t *testing.T) {
	pol, errs := wake.Compile(&wake.Config{Rules: []wake.RuleConfig{{Name: "probe", UserAgent: "kube-probe/.*"}}})
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	now := time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		name  string
		pol   *wake.Policy
		poked bool
		want  int32
	}{
		{"policy, load only", pol, false, 0},
		{"policy, poked", pol, true, 1},
		{"no policy, load only", nil, false, 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			spec := gateSpec(func(s *revision.Spec) { s.Wake = tt.pol })
			g := NewGate(now)
			out := g.Decide(GateInput{Now: now.Add(time.Minute), Spec: &spec, EnableScaleToZero: true, Poked: tt.poked,
				Result: Result{ScaleValid: true, DesiredPodCount: 1}})
			if out.Desired != tt.want {
				t.Fatalf("desired %d (%s), want %d", out.Desired, out.Reason, tt.want)
			}
		})
	}
}
