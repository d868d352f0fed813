package revision

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"
)

// MaxSplitTargets bounds a Split's traffic list (the RevisionSplit CRD's
// maxItems).
const MaxSplitTargets = 16

// MaxSplitHosts bounds a Split's hosts (the RevisionSplit CRD's maxItems).
const MaxSplitHosts = 16

// Errors wrapped by Split.Err, by cause.
var (
	// ErrSplitSpec: the split breaks a rule of its own (hosts, percents
	// that do not sum to 100, a name or tag twice).
	ErrSplitSpec = errors.New("invalid traffic split")
	// ErrSplitRevisionNotFound: a revision the split names is not known
	// (neither valid nor invalid).
	ErrSplitRevisionNotFound = errors.New("split revision not found")
	// ErrSplitRevisionInvalid: a revision the split names is invalid.
	ErrSplitRevisionInvalid = errors.New("split revision invalid")
	// ErrSplitConflict: a revision or host of the split already belongs
	// to a split created earlier.
	ErrSplitConflict = errors.New("split conflict")
)

// Split is a traffic split of thaw's own Envoy fleet: hosts whose requests
// go to several revisions by percent (a RevisionSplit with spec.hosts). It
// is the one source of truth of the hosts it names: a revision that lists
// one of them, with or without traffic.percent, loses that host to the
// split.
type Split struct {
	Key Key
	// Hosts are the split's hosts in normal form (NormalizeHost).
	Hosts []string
	// Traffic are the members in the order given; Revision is in the
	// split's namespace.
	Traffic []SplitTarget
	// Created orders splits that contest a revision or host: the earlier
	// keeps it (ties: the key that sorts first). On Kubernetes the
	// object's creationTimestamp, so every replica and every restart
	// decide alike; zero sorts first.
	Created time.Time
	// Err, set by the registry on publication, says why the split is not
	// routed (nil: routed). It wraps one of ErrSplitSpec,
	// ErrSplitRevisionNotFound, ErrSplitRevisionInvalid, ErrSplitConflict.
	// An invalid split keeps its hosts (they answer 404) unless another
	// split owns them.
	Err error
}

// SplitTarget is one member of a Split.
type SplitTarget struct {
	Revision Key
	// Percent is the member's share, 0..100; a 0% member gets no request
	// of the split (it scales to zero) but keeps its tag hosts.
	Percent int32
	// Tag, when set, gives the member a host of its own for each host of
	// the split that is not a wildcard: "<tag>-<host>".
	Tag string
}

// TagHosts returns the tag hosts of t in s: "<tag>-<host>" for every host
// of s that is not a wildcard, in the order of s.Hosts; nil without a tag.
func (s *Split) TagHosts(t SplitTarget) []string {
	if t.Tag == "" {
		return nil
	}
	var out []string
	for _, h := range s.Hosts {
		if !strings.HasPrefix(h, "*.") {
			out = append(out, t.Tag+"-"+h)
		}
	}
	return out
}

// validate returns the split's own problem (wrapping ErrSplitSpec), or nil.
func (s *Split) validate() error {
	fail := func(format string, a ...any) error {
		return fmt.Errorf("%w: %s", ErrSplitSpec, fmt.Sprintf(format, a...))
	}
	if n := len(s.Hosts); n == 0 || n > MaxSplitHosts {
		return fail("%d hosts, want 1..%d", n, MaxSplitHosts)
	}
	for i, h := range s.Hosts {
		if msg := checkHost(h); msg != "" {
			return fail("host %q: want %s", h, msg)
		}
		if slices.Contains(s.Hosts[:i], h) {
			return fail("host %q listed twice", h)
		}
	}
	if n := len(s.Traffic); n == 0 || n > MaxSplitTargets {
		return fail("%d traffic entries, want 1..%d", n, MaxSplitTargets)
	}
	sum := 0
	seen := map[string]bool{} // hosts and tag hosts
	for _, h := range s.Hosts {
		seen[h] = true
	}
	for i, t := range s.Traffic {
		if t.Revision.Namespace != s.Key.Namespace || t.Revision.Name == "" {
			return fail("revision %s is not in the split's namespace %s", t.Revision, s.Key.Namespace)
		}
		if t.Percent < 0 || t.Percent > MaxTrafficPercent {
			return fail("%s has percent %d, want 0..100", t.Revision.Name, t.Percent)
		}
		sum += int(t.Percent)
		for _, u := range s.Traffic[:i] {
			if u.Revision == t.Revision {
				return fail("revision %s named twice", t.Revision.Name)
			}
			if t.Tag != "" && u.Tag == t.Tag {
				return fail("tag %q used twice", t.Tag)
			}
		}
		if t.Tag == "" {
			continue
		}
		if msgs := validation.IsDNS1123Label(t.Tag); len(msgs) > 0 {
			return fail("tag %q: %s", t.Tag, msgs[0])
		}
		for _, th := range s.TagHosts(t) {
			if msg := checkHost(th); msg != "" {
				return fail("tag host %q: want %s", th, msg)
			}
			if label, _, _ := strings.Cut(th, "."); len(validation.IsDNS1123Label(label)) > 0 {
				return fail("tag host %q: its first label is not a DNS label", th)
			}
			if seen[th] {
				return fail("tag host %q is already a host of the split", th)
			}
			seen[th] = true
		}
	}
	if sum != MaxTrafficPercent {
		return fail("percents sum to %d, want 100", sum)
	}
	return nil
}

// Describe returns "ns/name (90%), ns/other (10%)" for logs and errors.
func (s *Split) Describe() string {
	ms := make([]string, len(s.Traffic))
	for i, t := range s.Traffic {
		ms[i] = fmt.Sprintf("%s (%d%%)", t.Revision, t.Percent)
	}
	return strings.Join(ms, ", ")
}

// splitEntry is a split as the registry keeps it.
type splitEntry struct {
	split Split
}

// resolveSplits returns every split with Err set, from the entries and
// the revisions' state (valid in revs, invalid in invalid). Splits are
// visited in creation order: a split whose rules hold claims its hosts
// and revisions (even while a revision is missing, so a split never
// takes over another's host because a revision was deleted for a
// moment); a later split naming a claimed host (or tag host) or
// revision is a conflict.
func resolveSplits(entries map[Key]*splitEntry, valid func(Key) bool, invalid map[Key]error) map[Key]*Split {
	if len(entries) == 0 {
		return nil
	}
	order := make([]*splitEntry, 0, len(entries))
	for _, e := range entries {
		order = append(order, e)
	}
	slices.SortFunc(order, func(a, b *splitEntry) int {
		switch {
		case !a.split.Created.Equal(b.split.Created):
			return a.split.Created.Compare(b.split.Created)
		case keyLess(a.split.Key, b.split.Key):
			return -1
		default:
			return 1
		}
	})
	hostOwner, revOwner := map[string]Key{}, map[Key]Key{}
	out := make(map[Key]*Split, len(order))
	for _, e := range order {
		s := e.split // a copy: the published Split is new
		s.Err = resolveSplit(&s, hostOwner, revOwner, valid, invalid)
		out[s.Key] = &s
	}
	return out
}

// resolveSplit checks one split against its rules, the claims of earlier
// splits (recording its own when its rules hold) and its revisions.
func resolveSplit(s *Split, hostOwner map[string]Key, revOwner map[Key]Key, valid func(Key) bool, invalid map[Key]error) error {
	if err := s.validate(); err != nil {
		return err
	}
	var conflicts []string
	hosts := slices.Clone(s.Hosts)
	for _, t := range s.Traffic {
		hosts = append(hosts, s.TagHosts(t)...)
	}
	for _, h := range hosts {
		if k, ok := hostOwner[h]; ok {
			conflicts = append(conflicts, fmt.Sprintf("host %q belongs to split %s", h, k))
		}
	}
	for _, t := range s.Traffic {
		if k, ok := revOwner[t.Revision]; ok {
			conflicts = append(conflicts, fmt.Sprintf("revision %s is a member of split %s", t.Revision, k))
		}
	}
	if len(conflicts) > 0 {
		return fmt.Errorf("%w: %s (a revision and a host belong to at most one split; the earlier split keeps them)",
			ErrSplitConflict, strings.Join(conflicts, "; "))
	}
	for _, h := range hosts {
		hostOwner[h] = s.Key
	}
	for _, t := range s.Traffic {
		revOwner[t.Revision] = s.Key
	}
	var missing, bad []string
	for _, t := range s.Traffic {
		if valid(t.Revision) {
			continue
		}
		if err, ok := invalid[t.Revision]; ok {
			bad = append(bad, fmt.Sprintf("%s: %v", t.Revision, err))
		} else {
			missing = append(missing, t.Revision.String())
		}
	}
	switch {
	case len(missing) > 0:
		return fmt.Errorf("%w: %s", ErrSplitRevisionNotFound, strings.Join(missing, ", "))
	case len(bad) > 0:
		return fmt.Errorf("%w: %s", ErrSplitRevisionInvalid, strings.Join(bad, "; "))
	}
	return nil
}

// sameSplits reports whether two resolved split sets say the same
// (errors compared by message).
func sameSplits(a, b map[Key]*Split) bool {
	if len(a) != len(b) {
		return false
	}
	for k, x := range a {
		y, ok := b[k]
		if !ok || !x.Created.Equal(y.Created) || !slices.Equal(x.Hosts, y.Hosts) || !slices.Equal(x.Traffic, y.Traffic) || !sameError(x.Err, y.Err) {
			return false
		}
	}
	return true
}
