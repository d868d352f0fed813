package translate

import (
	"errors"
	"strings"
	"testing"

	"github.com/thaw-dev/thaw/revision"
)

// TestPlanFleetRoutesLeftOut: a split the registry accepts whose member
// the plan leaves out is skipped with a *SplitLeftOutError naming that
// member and the plan's own reason, and nothing else.
func TestPlanFleetRoutesLeftOut(t *testing.T) {
	for _, tc := range []struct {
		name     string
		revs     []*revision.Revision
		wantLost string // member left out, "" when the split is routed
		wantErr  error  // the member's reason
	}{
		{
			name: "invalid per-revision split on another host",
			revs: []*revision.Revision{
				withSpec(rev("shop", "v1", revision.ModeServe, []string{"old.example.com"}),
					func(s *revision.Spec) { s.TrafficPercent = percent(90) }),
				rev("shop", "v2", revision.ModeServe, nil),
			},
			wantLost: "shop/v1", wantErr: ErrInvalidSplit,
		},
		{
			name: "host collision",
			revs: []*revision.Revision{
				rev("shop", "a", revision.ModeServe, []string{"dup.example.com"}),
				rev("shop", "v1", revision.ModeServe, nil),
				rev("shop", "v2", revision.ModeServe, []string{"dup.example.com"}),
			},
			wantLost: "shop/v2",
		},
		{
			name: "routed",
			revs: []*revision.Revision{
				rev("shop", "v1", revision.ModeServe, []string{"v1.example.com"}),
				rev("shop", "v2", revision.ModeServe, nil),
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			split := shopSplit("s", []string{"app.example.com"}, nil, target("v1", 90, ""), target("v2", 10, ""))
			p := PlanFleetRoutes(snapshotOf(tc.revs...).Sorted(), []*revision.Split{split}, nil)
			err := p.SkippedSplits[split.Key]
			if tc.wantLost == "" {
				if err != nil || len(p.Splits) != 1 {
					t.Fatalf("routed split: skipped %v, groups %+v", err, p.Splits)
				}
				return
			}
			var lo *SplitLeftOutError
			if !errors.As(err, &lo) || !errors.Is(err, ErrSplitMemberLeftOut) {
				t.Fatalf("SkippedSplits[s] = %v, want a *SplitLeftOutError", err)
			}
			if len(lo.LeftOut) != 1 || lo.LeftOut[0].Revision.String() != tc.wantLost || lo.Split != split.Key {
				t.Fatalf("left out %+v, want only %s", lo.LeftOut, tc.wantLost)
			}
			if tc.wantErr != nil && !errors.Is(lo.LeftOut[0].Err, tc.wantErr) {
				t.Errorf("member reason %v, want %v", lo.LeftOut[0].Err, tc.wantErr)
			}
			if !strings.Contains(err.Error(), tc.wantLost) || !strings.Contains(err.Error(), "shop/v1 (90%), shop/v2 (10%)") {
				t.Errorf("message %q", err)
			}
			for _, g := range p.Splits {
				if g.Split == split.Key {
					t.Errorf("left-out split still routed: %+v", g)
				}
			}
		})
	}
}
