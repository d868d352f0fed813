package translate

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/thaw-dev/thaw/revision"
)

// withSplits adds fleet splits (revision.Split, Err as given) to snap.
func withSplits(snap *revision.Snapshot, splits ...*revision.Split) *revision.Snapshot {
	snap.Splits = map[revision.Key]*revision.Split{}
	for _, s := range splits {
		snap.Splits[s.Key] = s
	}
	return snap
}

func shopSplit(name string, hosts []string, err error, targets ...revision.SplitTarget) *revision.Split {
	return &revision.Split{Key: revision.Key{Namespace: "shop", Name: name}, Hosts: hosts, Traffic: targets, Err: err}
}

func target(name string, p int32, tag string) revision.SplitTarget {
	return revision.SplitTarget{Revision: revision.Key{Namespace: "shop", Name: name}, Percent: p, Tag: tag}
}

// TestTranslateFleetSplitGolden covers RevisionSplits of thaw's own fleet:
// weighted clusters over the members' own clusters (serve, proxy, idle on
// the hold path), 0% members left out of the weights but reachable by
// their tag hosts, the split's precedence over per-revision
// traffic.percent and over a revision listing its host, and invalid
// splits whose hosts answer 404 while everything else is routed.
func TestTranslateFleetSplitGolden(t *testing.T) {
	members := func() []*revision.Revision {
		return []*revision.Revision{
			// v1 and v2 also split shop.example.com 50/50 by their own
			// percents (the short form): the RevisionSplit wins.
			withSpec(rev("shop", "v1", revision.ModeServe, []string{"shop.example.com"}, ready("10.0.0.1", 8080)),
				func(s *revision.Spec) { s.TrafficPercent = percent(50) }),
			withSpec(rev("shop", "v2", revision.ModeProxy, []string{"shop.example.com"}),
				func(s *revision.Spec) { s.TrafficPercent, s.RequestTimeout = percent(50), 600e9 }),
			// v0 keeps a host of its own.
			rev("shop", "v0", revision.ModeProxy, []string{"v0.example.com"}),
			// solo lists a split host: it keeps its other host only.
			rev("other", "solo", revision.ModeServe, []string{"solo.example.com", "www.shop.example.com"}, ready("10.0.0.9", 80)),
		}
	}
	valid := shopSplit("front", []string{"shop.example.com", "www.shop.example.com"}, nil,
		target("v1", 90, ""), target("v2", 10, "canary"), target("v0", 0, "previous"))
	tests := []struct {
		name    string
		snap    *revision.Snapshot
		hold    bool
		wantErr string
	}{
		{name: "fleet_split", snap: withSplits(snapshotOf(members()...), valid)},
		{name: "fleet_split_hold", hold: true, snap: withSplits(snapshotOf(members()...), valid)},
		// front names a missing revision (registry: RevisionNotFound):
		// its hosts answer 404, v0 and solo keep their own.
		// back's member dup loses its own host to a collision: back is
		// not routed either.
		{name: "fleet_split_invalid", wantErr: "members left out", snap: withSplits(snapshotOf(append(members(),
			rev("shop", "dup", revision.ModeServe, []string{"solo.example.com"}, ready("10.0.0.7", 80)),
			rev("shop", "v3", revision.ModeServe, nil, ready("10.0.0.8", 80)))...),
			shopSplit("front", []string{"shop.example.com"}, errors.Join(revision.ErrSplitRevisionNotFound, errors.New("shop/gone")),
				target("v1", 50, ""), target("gone", 50, "")),
			shopSplit("back", []string{"back.example.com"}, nil, target("dup", 50, ""), target("v3", 50, "")))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := testConfig()
			cfg.IdleHoldPath = tt.hold
			res, err := Translate(tt.snap, cfg)
			if res == nil {
				t.Fatalf("Translate: %v", err)
			}
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("Translate: %v", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("Translate error = %v, want one containing %q", err, tt.wantErr)
			}
			checkGolden(t, filepath.Join("testdata", "translate_"+tt.name+".yaml"), goldenYAML(t, res))
		})
	}
}

// TestPlanFleetRoutes checks the plan's decisions directly.
func TestPlanFleetRoutes(t *testing.T) {
	revs := snapshotOf(
		withSpec(rev("shop", "v1", revision.ModeServe, []string{"shop.example.com"}),
			func(s *revision.Spec) { s.TrafficPercent = percent(60) }),
		withSpec(rev("shop", "v2", revision.ModeServe, []string{"shop.example.com"}),
			func(s *revision.Spec) { s.TrafficPercent = percent(40) }),
		rev("shop", "v3", revision.ModeServe, []string{"canary-app.example.com"}),
	).Sorted()
	split := shopSplit("s", []string{"app.example.com", "*.app.example.com"}, nil, target("v2", 100, ""), target("v1", 0, "canary"))
	bad := shopSplit("bad", []string{"bad.example.com"}, errors.New("broken"), target("v3", 100, ""))
	p := PlanFleetRoutes(revs, []*revision.Split{bad, split}, nil)
	if len(p.Skipped) != 0 {
		t.Fatalf("skipped revisions %v, want none", p.Skipped)
	}
	// Per-revision percents on shop.example.com still split it; the
	// fleet split adds its own group.
	if len(p.Splits) != 2 {
		t.Fatalf("splits %+v, want the percent split and the fleet split", p.Splits)
	}
	g := p.Splits[1]
	if g.Split != split.Key || strings.Join(g.Domains, ",") != "app.example.com,*.app.example.com" ||
		g.Members[0].Key.Name != "v1" || *g.Members[0].Percent != 0 || *g.Members[1].Percent != 100 {
		t.Errorf("fleet group %+v", g)
	}
	// v1's tag host (no tag host for the wildcard); v3 lost its host to
	// the split's tag host.
	for i, r := range revs {
		want := map[string]string{"v1": "canary-app.example.com", "v2": "", "v3": ""}[r.Key.Name]
		if got := strings.Join(p.Domains[i], ","); got != want {
			t.Errorf("%s domains %q, want %q", r.Key, got, want)
		}
	}
	if err := p.SkippedSplits[bad.Key]; err == nil || !strings.Contains(err.Error(), "broken") {
		t.Errorf("SkippedSplits[bad] = %v", err)
	}
	if _, ok := p.SkippedSplits[split.Key]; ok {
		t.Errorf("routed split reported skipped")
	}
}
