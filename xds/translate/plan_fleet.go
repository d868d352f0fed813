package translate

import (
	"fmt"
	"slices"

	"github.com/thaw-dev/thaw/revision"
)

// fleetPlan is what the splits of thaw's own fleet (revision.Split, a
// RevisionSplit with hosts) impose on a route plan.
type fleetPlan struct {
	splits []*revision.Split
	// reserved are the hosts and tag hosts of every split, valid or not:
	// a split is the one source of truth of its hosts, so a revision
	// listing one (with or without traffic.percent) does not get it, and
	// an invalid split's hosts answer 404 rather than fall back to a
	// revision.
	reserved map[string]bool
	// tags are the tag hosts each member of a routed split serves alone.
	tags map[revision.Key][]string
}

// newFleetPlan indexes splits (sorted by key).
func newFleetPlan(splits []*revision.Split) *fleetPlan {
	f := &fleetPlan{splits: splits}
	if len(splits) == 0 {
		return f
	}
	f.reserved, f.tags = map[string]bool{}, map[revision.Key][]string{}
	for _, s := range splits {
		for _, h := range s.Hosts {
			f.reserved[h] = true
		}
		for _, t := range s.Traffic {
			ths := s.TagHosts(t)
			for _, th := range ths {
				f.reserved[th] = true
			}
			if s.Err == nil {
				f.tags[t.Revision] = append(f.tags[t.Revision], ths...)
			}
		}
	}
	return f
}

// groups returns the virtual host groups of the routed splits, and adds
// to skippedSplits every split that is not routed: invalid in the
// registry (Split.Err), or with a member the plan left out (a
// *SplitLeftOutError: its hosts answer 404; its other members keep their
// own hosts).
func (f *fleetPlan) groups(skipped map[revision.Key]error, skippedSplits map[revision.Key]error) []SplitGroup {
	var out []SplitGroup
	for _, s := range f.splits {
		if s.Err != nil {
			skippedSplits[s.Key] = fmt.Errorf("split %s among %s: %w; its hosts are not routed", s.Key, s.Describe(), s.Err)
			continue
		}
		ms := make([]SplitMember, 0, len(s.Traffic))
		var lost []LeftOutMember
		for _, t := range s.Traffic {
			if err := skipped[t.Revision]; err != nil {
				lost = append(lost, LeftOutMember{Revision: t.Revision, Err: err})
			}
			p := t.Percent
			ms = append(ms, SplitMember{Key: t.Revision, Percent: &p})
		}
		if len(lost) > 0 {
			skippedSplits[s.Key] = &SplitLeftOutError{Split: s.Key, Describe: s.Describe(), LeftOut: lost}
			continue
		}
		slices.SortFunc(ms, func(a, b SplitMember) int {
			switch {
			case a.Key == b.Key:
				return 0
			case a.Key.Namespace < b.Key.Namespace || (a.Key.Namespace == b.Key.Namespace && a.Key.Name < b.Key.Name):
				return -1
			default:
				return 1
			}
		})
		out = append(out, SplitGroup{Domains: slices.Clone(s.Hosts), Members: ms, Split: s.Key})
	}
	return out
}

// PlanFleetRoutes is PlanRoutes with the splits of thaw's own fleet
// (snapshot splits sorted by key, see revision.Snapshot.SortedSplits):
// each routed split becomes a SplitGroup of its hosts (its members'
// weighted clusters), each member serves its tag hosts alone, every
// split's hosts and tag hosts are taken from the revisions that list them
// (the split wins over per-revision traffic.percent), and a split that is
// not routed is in RoutePlan.SkippedSplits.
func PlanFleetRoutes(revs []*revision.Revision, splits []*revision.Split, excluded map[revision.Key]error) *RoutePlan {
	return planRoutes(revs, newFleetPlan(splits), excluded)
}
