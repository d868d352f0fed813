package translate

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/thaw-dev/thaw/revision"
)

// ErrInvalidSplit is wrapped by every *SplitError.
var ErrInvalidSplit = errors.New("invalid traffic split")

// SplitError reports a host whose revisions do not form a valid traffic
// split: one of them sets no traffic percent, or the percents do not sum
// to 100. Every revision listing the host is left out of the translation
// (the host answers 404), so a half-configured split never sends a share
// of the traffic to the wrong revision; revisions on other hosts are
// untouched.
type SplitError struct {
	Host string
	// Members are the revisions that list Host, sorted by key, and their
	// percents (nil: none set).
	Members []SplitMember
	// Reason says what is wrong ("percents sum to 90, want 100").
	Reason string
}

// SplitMember is one revision of a split and its percent (nil: none).
type SplitMember struct {
	Key     revision.Key
	Percent *int32
}

// Error names the host, the members with their percents and the reason.
func (e *SplitError) Error() string {
	ms := make([]string, len(e.Members))
	for i, m := range e.Members {
		p := "no percent"
		if m.Percent != nil {
			p = strconv.Itoa(int(*m.Percent)) + "%"
		}
		ms[i] = fmt.Sprintf("%s (%s)", m.Key, p)
	}
	return fmt.Sprintf("traffic split of host %q among %s: %s; every revision of the host left out",
		e.Host, strings.Join(ms, ", "), e.Reason)
}

// Unwrap makes errors.Is(err, ErrInvalidSplit) true.
func (e *SplitError) Unwrap() error { return ErrInvalidSplit }

// RoutePlan is which revision serves which host: the pure decision part of
// a translation.
type RoutePlan struct {
	// Skipped are the revisions left out, and why.
	Skipped map[revision.Key]error
	// Domains[i] are the hosts revs[i] serves alone (its own hosts that
	// are not split, then its tag host), in normal form; nil for a skipped
	// revision.
	Domains [][]string
	// Splits are the split hosts, grouped by identical member lists, in
	// the order their first host was first listed, then the routed splits
	// of thaw's own fleet by key (PlanFleetRoutes).
	Splits []SplitGroup
	// SkippedSplits are the fleet splits that are not routed, and why.
	SkippedSplits map[revision.Key]error
}

// SkippedErr joins the errors of the revisions in revs that the plan
// skipped, each error once (the members of an invalid split share one),
// in the order of revs; nil when none was skipped.
func (p *RoutePlan) SkippedErr(revs []*revision.Revision) error {
	var errs []error
	for _, k := range slices.SortedFunc(maps.Keys(p.SkippedSplits), func(a, b revision.Key) int {
		return strings.Compare(a.String(), b.String())
	}) {
		errs = append(errs, p.SkippedSplits[k])
	}
	if len(p.Skipped) == 0 {
		return errors.Join(errs...)
	}
	reported := make(map[error]bool, len(p.Skipped))
	for _, rev := range revs {
		if err := p.Skipped[rev.Key]; err != nil && !reported[err] {
			reported[err] = true
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// SplitGroup is hosts shared by the same revisions with the same percents.
type SplitGroup struct {
	Domains []string
	Members []SplitMember // sorted by key; every Percent set
	// Split is the fleet split (revision.Split) the group routes; zero
	// for hosts split by per-revision traffic.percent.
	Split revision.Key
}

// claim is one revision listing one host.
type claim struct {
	rev *revision.Revision
	// percent is the revision's TrafficPercent, nil for a tag host (which
	// routes only to its revision).
	percent *int32
	tag     bool
}

// PlanRoutes decides the routing of revs (sorted by key) with the
// revisions in excluded left out:
//
//   - A host listed by one revision without a percent, or by one with 100,
//     is that revision's alone.
//   - A host listed by several revisions none of which sets a percent is a
//     host collision: the revision that sorts first keeps it, the others
//     are skipped (HostCollisionError), as before traffic splitting.
//   - A host where any listing revision sets a percent is a split: valid
//     when every one sets a percent and they sum to 100, else every
//     revision listing the host is skipped (SplitError).
//
// A tag host (revision.Spec.TagHost) counts as a host without a percent.
// Skipping a revision can break a split on one of its other hosts, so the
// plan is repeated without the skipped revisions until nothing changes (at
// most once per revision). Without any traffic percent it costs what host
// collision detection alone costs: one map of hosts.
func PlanRoutes(revs []*revision.Revision, excluded map[revision.Key]error) *RoutePlan {
	return planRoutes(revs, newFleetPlan(nil), excluded)
}

func planRoutes(revs []*revision.Revision, fleet *fleetPlan, excluded map[revision.Key]error) *RoutePlan {
	skipped := maps.Clone(excluded)
	if skipped == nil {
		skipped = map[revision.Key]error{}
	}
	for {
		// Every round that asks for another one skipped at least one more
		// revision: at most len(revs) + 1 rounds.
		if p, again := planOnce(revs, fleet, skipped); !again {
			return p
		}
	}
}

// planOnce runs one round of PlanRoutes, adding to skipped. again is true
// when a split member was skipped, which calls for another round.
func planOnce(revs []*revision.Revision, fleet *fleetPlan, skipped map[revision.Key]error) (p *RoutePlan, again bool) {
	hosts, claims := splitClaims(revs, skipped, fleet.reserved)
	split := map[string]bool{}
	for _, h := range hosts {
		cs := claims[h]
		if len(cs) == 1 && *cs[0].percent == revision.MaxTrafficPercent {
			continue // the revision's alone
		}
		if reason := splitProblem(cs); reason != "" {
			err := &SplitError{Host: h, Members: membersOf(cs), Reason: reason}
			for _, c := range cs {
				skipped[c.rev.Key] = err
			}
			again = true
			continue
		}
		split[h] = true
	}
	if again {
		return nil, true
	}
	p = &RoutePlan{Skipped: skipped, Domains: make([][]string, len(revs))}
	owner := make(map[string]revision.Key, len(revs))
	for i, rev := range revs {
		if skipped[rev.Key] != nil {
			continue
		}
		domains, err := claimHosts(owner, split, fleet.reserved, rev)
		if err != nil {
			skipped[rev.Key] = err
			if rev.Spec.TrafficPercent != nil {
				again = true // its splits lost a member
			}
			continue
		}
		domains = append(domains, fleet.tags[rev.Key]...)
		for _, d := range domains {
			owner[d] = rev.Key
		}
		p.Domains[i] = domains
	}
	if again {
		return nil, true
	}
	p.Splits = groupSplits(hosts, split, claims)
	if len(fleet.splits) > 0 {
		p.SkippedSplits = map[revision.Key]error{}
		p.Splits = append(p.Splits, fleet.groups(skipped, p.SkippedSplits)...)
	}
	return p, false
}

// splitClaims returns the hosts that a revision with a traffic percent
// lists (in first-listed order) and, for each, every revision (not
// skipped) that lists it, as a host or as its tag host. Both are empty
// when no revision sets a percent: the common case costs one pass.
func splitClaims(revs []*revision.Revision, skipped map[revision.Key]error, reserved map[string]bool) ([]string, map[string][]claim) {
	var hosts []string
	claims := map[string][]claim{}
	for _, rev := range revs {
		if rev.Spec.TrafficPercent == nil || skipped[rev.Key] != nil {
			continue
		}
		for _, h := range rev.Spec.Hosts {
			if h = revision.NormalizeHost(h); claims[h] == nil && !reserved[h] {
				hosts = append(hosts, h)
				claims[h] = []claim{}
			}
		}
	}
	if len(hosts) == 0 {
		return nil, nil
	}
	for _, rev := range revs {
		if skipped[rev.Key] != nil {
			continue
		}
		for _, h := range rev.Spec.Hosts {
			h = revision.NormalizeHost(h)
			if cs, ok := claims[h]; ok {
				claims[h] = append(cs, claim{rev: rev, percent: rev.Spec.TrafficPercent})
			}
		}
		if th := rev.Spec.TagHost(); th != "" {
			if cs, ok := claims[th]; ok {
				claims[th] = append(cs, claim{rev: rev, tag: true})
			}
		}
	}
	return hosts, claims
}

// claimHosts returns the hosts rev serves alone (normal form, its tag host
// last), or a joined *HostCollisionError for each of them another revision
// already owns. Split hosts are shared, never owned.
func claimHosts(owner map[string]revision.Key, split, reserved map[string]bool, rev *revision.Revision) ([]string, error) {
	th := rev.Spec.TagHost()
	n := len(rev.Spec.Hosts)
	if th != "" {
		n++
	}
	if n == 0 {
		return nil, nil // no virtual host: only cluster and endpoints
	}
	domains := make([]string, 0, n)
	var errs []error
	claimOne := func(d string) {
		if split[d] || reserved[d] {
			return // shared, or a fleet split's (plan_fleet.go)
		}
		if k, taken := owner[d]; taken {
			errs = append(errs, &HostCollisionError{Host: d, Kept: k, Skipped: rev.Key})
			return
		}
		domains = append(domains, d)
	}
	for _, h := range rev.Spec.Hosts {
		claimOne(revision.NormalizeHost(h))
	}
	if th != "" {
		claimOne(th)
	}
	return domains, errors.Join(errs...)
}

// splitProblem returns "" when the claims form a valid split, else why not.
func splitProblem(cs []claim) string {
	sum := 0
	for _, c := range cs {
		switch {
		case c.tag:
			return fmt.Sprintf("it is also the tag host of %s, which routes only to that revision", c.rev.Key)
		case c.percent == nil:
			return fmt.Sprintf("%s sets no traffic percent (every revision of a split needs one)", c.rev.Key)
		}
		sum += int(*c.percent)
	}
	if sum != revision.MaxTrafficPercent {
		return fmt.Sprintf("percents sum to %d, want 100", sum)
	}
	return ""
}

func membersOf(cs []claim) []SplitMember {
	ms := make([]SplitMember, len(cs))
	for i, c := range cs {
		ms[i] = SplitMember{Key: c.rev.Key, Percent: c.percent}
	}
	return ms
}

// groupSplits groups the split hosts by identical members and percents,
// in the order of hosts.
func groupSplits(hosts []string, split map[string]bool, claims map[string][]claim) []SplitGroup {
	var groups []SplitGroup
	index := map[string]int{}
	for _, h := range hosts {
		if !split[h] {
			continue
		}
		ms := membersOf(claims[h])
		sig := MembersSignature(ms)
		if i, ok := index[sig]; ok {
			groups[i].Domains = append(groups[i].Domains, h)
			continue
		}
		index[sig] = len(groups)
		groups = append(groups, SplitGroup{Domains: []string{h}, Members: ms})
	}
	return groups
}

// MembersSignature is a string equal for equal member lists.
func MembersSignature(ms []SplitMember) string {
	var b strings.Builder
	for _, m := range ms {
		b.WriteString(m.Key.String())
		b.WriteByte('=')
		b.WriteString(strconv.Itoa(int(*m.Percent)))
		b.WriteByte(' ')
	}
	return b.String()
}
