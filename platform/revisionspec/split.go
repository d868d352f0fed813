package revisionspec

import (
	"errors"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/thaw-dev/thaw/api/v1alpha1"
	"github.com/thaw-dev/thaw/revision"
)

// MaxSplitMembers bounds a RevisionSplit's traffic list (the CRD's
// MaxItems).
const MaxSplitMembers = 16

// ErrSplitRule marks a RevisionSplit that breaks one of its rules (see
// ValidateSplit).
var ErrSplitRule = errors.New("invalid RevisionSplit")

// splitRuleError is a broken rule: its text is the rule alone (callers
// name the split), and errors.Is matches ErrSplitRule.
type splitRuleError string

func (e splitRuleError) Error() string        { return string(e) }
func (e splitRuleError) Is(target error) bool { return target == ErrSplitRule }

// ValidateSplit checks what the RevisionSplit CRD's schema checks at
// admission, for objects that skipped it (Envoy Gateway's file provider,
// objects stored before a schema change): 1..16 traffic entries, each
// Revision named once with a valid name, percents 0..100 summing to 100,
// tags DNS labels used once, protocol "", http1 or h2c. It returns the
// split's protocol (http1 when unset) or the first rule broken, matching
// ErrSplitRule (errors.Is) and naming the field ("traffic percents sum to 90, want
// 100"). Both the Envoy Gateway hooks (egext) and the kube platform's
// RevisionSplit status use it, so they agree on what is invalid.
func ValidateSplit(s *v1alpha1.RevisionSplit) (revision.Protocol, error) {
	fail := func(format string, a ...any) (revision.Protocol, error) {
		return "", splitRuleError(fmt.Sprintf(format, a...))
	}
	proto := revision.ProtocolHTTP1
	switch p := revision.Protocol(s.Spec.Protocol); p {
	case "", revision.ProtocolHTTP1:
	case revision.ProtocolH2C:
		proto = p
	default:
		return fail("spec.protocol %q, want \"http1\" or \"h2c\"", p)
	}
	n := len(s.Spec.Traffic)
	if n == 0 || n > MaxSplitMembers {
		return fail("spec.traffic has %d entries, want 1..%d", n, MaxSplitMembers)
	}
	var sum int64
	names, tags := make([]string, 0, n), make([]string, 0, n)
	for i, t := range s.Spec.Traffic {
		if msgs := validation.IsDNS1123Subdomain(t.RevisionName); len(msgs) > 0 {
			return fail("spec.traffic[%d].revisionName %q: %s", i, t.RevisionName, msgs[0])
		}
		if slices.Contains(names, t.RevisionName) {
			return fail("spec.traffic names Revision %q twice", t.RevisionName)
		}
		names = append(names, t.RevisionName)
		if t.Percent < 0 || t.Percent > 100 {
			return fail("spec.traffic[%d].percent %d, want 0..100", i, t.Percent)
		}
		sum += int64(t.Percent)
		if t.Tag != "" {
			if msgs := validation.IsDNS1123Label(t.Tag); len(msgs) > 0 {
				return fail("spec.traffic[%d].tag %q: %s", i, t.Tag, msgs[0])
			}
			if slices.Contains(tags, t.Tag) {
				return fail("spec.traffic uses tag %q twice", t.Tag)
			}
			tags = append(tags, t.Tag)
		}
	}
	if sum != 100 {
		return fail("traffic percents sum to %d, want 100", sum)
	}
	return proto, nil
}
