package translate

import (
	"errors"
	"fmt"

	"github.com/thaw-dev/thaw/revision"
)

// ErrSplitMemberLeftOut is wrapped by every *SplitLeftOutError.
var ErrSplitMemberLeftOut = errors.New("traffic split member left out of Envoy configuration")

// SplitLeftOutError reports a split of thaw's own fleet (revision.Split)
// that the registry accepts (Split.Err nil) but the translation does not
// route: a member revision was left out of the plan (a host collision, an
// invalid per-revision traffic split on another of its hosts), so the
// split's hosts answer 404. It is the translation's verdict: only the
// translation finds it (RoutePlan.SkippedSplits).
type SplitLeftOutError struct {
	// Split is the split's key; Describe its members with their percents
	// (revision.Split.Describe).
	Split    revision.Key
	Describe string
	// LeftOut are the members left out, in the split's traffic order,
	// each with the plan's reason.
	LeftOut []LeftOutMember
}

// LeftOutMember is one member of a split that the plan left out, and why
// (a *HostCollisionError, a *SplitError, or the reason it was excluded).
type LeftOutMember struct {
	Revision revision.Key
	Err      error
}

// Error names the split, its members and each member left out with why.
func (e *SplitLeftOutError) Error() string {
	lost := make([]string, len(e.LeftOut))
	for i, m := range e.LeftOut {
		lost[i] = fmt.Sprintf("%s (%v)", m.Revision, m.Err)
	}
	return fmt.Sprintf("split %s among %s: members left out of Envoy configuration: %v; its hosts are not routed",
		e.Split, e.Describe, lost)
}

// Unwrap makes errors.Is(err, ErrSplitMemberLeftOut) true.
func (e *SplitLeftOutError) Unwrap() error { return ErrSplitMemberLeftOut }
