package translate

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/thaw-dev/thaw/revision"
)

// splitRev returns a proxy-mode revision with a traffic percent (nil: none)
// and a tag.
func splitRev(ns, name string, p *int32, tag string, hosts ...string) *revision.Revision {
	return withSpec(rev(ns, name, revision.ModeProxy, hosts), func(s *revision.Spec) { s.TrafficPercent, s.Tag = p, tag })
}

func TestPlanRoutes(t *testing.T) {
	type want struct {
		// skipped: revision → the error it must wrap and a text it must
		// contain.
		skipped map[string]struct {
			is   error
			text string
		}
		domains map[string][]string
		splits  []string // "domains: key=percent ..." per group
	}
	type skip = struct {
		is   error
		text string
	}
	tests := []struct {
		name string
		revs []*revision.Revision
		want want
	}{
		{
			name: "shared host without percents is a collision, the first key keeps it",
			revs: []*revision.Revision{splitRev("a", "one", nil, "", "x.test"), splitRev("a", "two", nil, "", "x.test", "y.test")},
			want: want{
				skipped: map[string]skip{"a/two": {ErrHostCollision, `"x.test"`}},
				domains: map[string][]string{"a/one": {"x.test"}},
			},
		},
		{
			name: "90/10 split, hosts of identical members grouped",
			revs: []*revision.Revision{
				splitRev("a", "v1", percent(90), "", "x.test", "y.test"),
				splitRev("a", "v2", percent(10), "", "x.test", "y.test"),
			},
			want: want{
				domains: map[string][]string{"a/v1": {}, "a/v2": {}},
				splits:  []string{"x.test,y.test: a/v1=90 a/v2=10 "},
			},
		},
		{
			name: "percents summing to 90: both members skipped, others untouched",
			revs: []*revision.Revision{
				splitRev("a", "v1", percent(80), "", "x.test"),
				splitRev("a", "v2", percent(10), "", "x.test"),
				splitRev("b", "other", nil, "", "other.test"),
			},
			want: want{
				skipped: map[string]skip{"a/v1": {ErrInvalidSplit, "sum to 90"}, "a/v2": {ErrInvalidSplit, "sum to 90"}},
				domains: map[string][]string{"b/other": {"other.test"}},
			},
		},
		{
			name: "a member without a percent",
			revs: []*revision.Revision{
				splitRev("a", "v1", percent(100), "", "x.test"),
				splitRev("a", "v2", nil, "", "x.test"),
			},
			want: want{skipped: map[string]skip{
				"a/v1": {ErrInvalidSplit, "a/v2 sets no traffic percent"},
				"a/v2": {ErrInvalidSplit, "a/v2 sets no traffic percent"},
			}},
		},
		{
			name: "one revision at 100% owns its host",
			revs: []*revision.Revision{splitRev("a", "v1", percent(100), "", "x.test")},
			want: want{domains: map[string][]string{"a/v1": {"x.test"}}},
		},
		{
			name: "one revision at 50% alone is an invalid split",
			revs: []*revision.Revision{splitRev("a", "v1", percent(50), "", "x.test")},
			want: want{skipped: map[string]skip{"a/v1": {ErrInvalidSplit, "sum to 50"}}},
		},
		{
			name: "0% member: in the split, with its tag host of its own",
			revs: []*revision.Revision{
				splitRev("a", "v1", percent(100), "", "x.test"),
				splitRev("a", "v2", percent(0), "next", "x.test"),
			},
			want: want{
				domains: map[string][]string{"a/v1": {}, "a/v2": {"next-x.test"}},
				splits:  []string{"x.test: a/v1=100 a/v2=0 "},
			},
		},
		{
			name: "a split host that is also a tag host",
			revs: []*revision.Revision{
				splitRev("a", "v1", percent(50), "", "t-y.test"),
				splitRev("a", "v2", percent(50), "", "t-y.test"),
				splitRev("b", "tagged", nil, "t", "y.test"),
			},
			want: want{skipped: map[string]skip{
				"a/v1":     {ErrInvalidSplit, "tag host of b/tagged"},
				"a/v2":     {ErrInvalidSplit, "tag host of b/tagged"},
				"b/tagged": {ErrInvalidSplit, "tag host of b/tagged"},
			}},
		},
		{
			name: "a member skipped for a collision of its tag host breaks its split",
			revs: []*revision.Revision{
				splitRev("a", "owner", nil, "", "t-s.test"),
				splitRev("b", "v1", percent(90), "t", "s.test"),
				splitRev("b", "v2", percent(10), "", "s.test"),
			},
			want: want{
				skipped: map[string]skip{"b/v1": {ErrHostCollision, `"t-s.test"`}, "b/v2": {ErrInvalidSplit, "sum to 10"}},
				domains: map[string][]string{"a/owner": {"t-s.test"}},
			},
		},
		{
			name: "an invalid split cascades to the other splits of its members",
			revs: []*revision.Revision{
				splitRev("a", "a", percent(50), "", "x.test", "y.test"),
				splitRev("a", "b", percent(50), "", "x.test"),
				splitRev("a", "c", percent(50), "", "y.test"),
				splitRev("a", "d", percent(40), "", "y.test"),
				splitRev("a", "e", nil, "", "e.test"),
			},
			want: want{
				skipped: map[string]skip{
					"a/a": {ErrInvalidSplit, "sum to 140"}, "a/c": {ErrInvalidSplit, "sum to 140"},
					"a/d": {ErrInvalidSplit, "sum to 140"}, "a/b": {ErrInvalidSplit, "sum to 50"},
				},
				domains: map[string][]string{"a/e": {"e.test"}},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			revs := snapshotOf(tt.revs...).Sorted()
			p := PlanRoutes(revs, nil)
			if len(p.Skipped) != len(tt.want.skipped) {
				t.Errorf("skipped = %v, want %d revisions", p.Skipped, len(tt.want.skipped))
			}
			for k, w := range tt.want.skipped {
				key, _ := revision.ParseKey(k)
				err := p.Skipped[key]
				if !errors.Is(err, w.is) || !strings.Contains(errText(err), w.text) {
					t.Errorf("%s skipped with %v, want errors.Is %v and text %q", k, err, w.is, w.text)
				}
			}
			got := map[string][]string{}
			for i, d := range p.Domains {
				if d != nil {
					got[revs[i].Key.String()] = append([]string{}, d...)
				}
			}
			wantDomains := tt.want.domains
			if wantDomains == nil {
				wantDomains = map[string][]string{}
			}
			if diff := cmp.Diff(wantDomains, got); diff != "" {
				t.Errorf("domains (-want +got):\n%s", diff)
			}
			var splits []string
			for _, g := range p.Splits {
				splits = append(splits, strings.Join(g.Domains, ",")+": "+MembersSignature(g.Members))
			}
			if diff := cmp.Diff(tt.want.splits, splits); diff != "" {
				t.Errorf("splits (-want +got):\n%s", diff)
			}
		})
	}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// TestTranslateSplitZeroPercent: a 0% member keeps its cluster and
// endpoints (it can be reached by its tag host and scales on its own) but
// is no weighted cluster of the split route.
func TestTranslateSplitZeroPercent(t *testing.T) {
	res, err := Translate(snapshotOf(
		splitRev("a", "v1", percent(100), "", "x.test"),
		splitRev("a", "v2", percent(0), "", "x.test"),
	), testConfig())
	if err != nil {
		t.Fatal(err)
	}
	if got := names(res); !cmp.Equal(got, []string{"rev_a_v1", "rev_a_v2", ActivatorDstClusterName}) {
		t.Errorf("clusters = %v, want both revisions' and %s", got, ActivatorDstClusterName)
	}
	vhs := virtualHosts(res)
	if len(vhs) != 2 {
		t.Fatalf("virtual hosts = %d, want the split host's and the catch-all", len(vhs))
	}
	wc := vhs[0].GetRoutes()[0].GetRoute().GetWeightedClusters().GetClusters()
	if len(wc) != 1 || wc[0].GetName() != "rev_a_v1" || wc[0].GetWeight().GetValue() != 100 {
		t.Errorf("weighted clusters = %v, want only rev_a_v1 at 100", wc)
	}
}

func TestMaxTimeouts(t *testing.T) {
	tests := []struct {
		name string
		in   []RouteTimeouts
		want RouteTimeouts
	}{
		{"defaults filled in", []RouteTimeouts{{}}, RouteTimeouts{Request: revision.DefaultRequestTimeout, Hold: revision.DefaultHoldTimeout}},
		{"longest of each", []RouteTimeouts{{Request: time.Minute, Hold: 2 * time.Minute, Idle: time.Second},
			{Request: 10 * time.Minute, Hold: time.Second, Idle: 3 * time.Second}},
			RouteTimeouts{Request: 10 * time.Minute, Hold: 2 * time.Minute, Idle: 3 * time.Second}},
		{"no idle limit wins", []RouteTimeouts{{Idle: time.Second}, {}},
			RouteTimeouts{Request: revision.DefaultRequestTimeout, Hold: revision.DefaultHoldTimeout}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := MaxTimeouts(tt.in); got != tt.want {
				t.Errorf("MaxTimeouts = %+v, want %+v", got, tt.want)
			}
		})
	}
}
