package egext

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/thaw-dev/thaw/api/v1alpha1"
	"github.com/thaw-dev/thaw/platform/revisionspec"
	"github.com/thaw-dev/thaw/revision"
)

// SplitKind is the kind of thaw's traffic split backend (thaw.dev/v1alpha1
// RevisionSplit), listed in EG's extensionManager.backendResources beside
// Revision.
const SplitKind = v1alpha1.RevisionSplitKind

// maxSplitMembers bounds a RevisionSplit's traffic list (the CRD's
// MaxItems).
const maxSplitMembers = revisionspec.MaxSplitMembers

// ErrInvalidSplit wraps every problem with a RevisionSplit object; its
// route answers 500 with the reason (InvalidRoute).
var ErrInvalidSplit = errors.New("egext: invalid RevisionSplit")

// SplitMember is one Revision of a Split.
type SplitMember struct {
	Key revision.Key
	// Percent is the share of the route's requests, 0..100.
	Percent uint32
	// Tag is the member's tag ("" for none): its host "<tag>-<host>".
	Tag string
}

// Split is what the hooks read from a RevisionSplit: its key, members (in
// the object's order) and the protocol of every member's cluster.
type Split struct {
	Key      revision.Key
	Members  []SplitMember
	Protocol revision.Protocol
}

// MemberCluster is the name of the EG-side cluster of a split member:
// "thaw/rev/<ns>/<name>" (h2c members "thaw/rev-h2c/<ns>/<name>"). It
// depends on the revision and protocol only, so every split naming the
// revision shares one cluster (one EDS stream), and the route and
// translate hooks agree on it without sharing state.
func MemberCluster(key revision.Key, p revision.Protocol) string {
	if p == revision.ProtocolH2C {
		return "thaw/rev-h2c/" + key.Namespace + "/" + key.Name
	}
	return "thaw/rev/" + key.Namespace + "/" + key.Name
}

// isSplit reports whether b is a thaw.dev RevisionSplit, of any version.
func isSplit(b []byte) bool {
	var o revisionObject
	if json.Unmarshal(b, &o) != nil {
		return false
	}
	return o.Kind == SplitKind && groupOf(o.APIVersion) == Group
}

// ParseSplit reads a RevisionSplit from an unstructured object's JSON (the
// api/v1alpha1 type). It checks what the CRD's schema checks at admission
// (EG's file provider has no admission) through revisionspec.ValidateSplit,
// the same rules the kube platform reports in the RevisionSplit's status.
// Errors wrap ErrInvalidSplit and name the split and the rule broken.
func ParseSplit(b []byte) (Split, error) {
	var o v1alpha1.RevisionSplit
	if err := json.Unmarshal(b, &o); err != nil {
		return Split{}, fmt.Errorf("%w: %w", ErrInvalidSplit, err)
	}
	if o.APIVersion != APIVersion || o.Kind != SplitKind {
		return Split{}, fmt.Errorf("%w: %s %s, want %s %s", ErrInvalidSplit, o.APIVersion, o.Kind, APIVersion, SplitKind)
	}
	if o.Name == "" || o.Namespace == "" {
		return Split{}, fmt.Errorf("%w: metadata.name and metadata.namespace are required", ErrInvalidSplit)
	}
	s := Split{Key: revision.Key{Namespace: o.Namespace, Name: o.Name}}
	proto, err := revisionspec.ValidateSplit(&o)
	if err != nil {
		return Split{}, fmt.Errorf("%w %s: %w", ErrInvalidSplit, s.Key, err)
	}
	s.Protocol = proto
	for _, t := range o.Spec.Traffic {
		s.Members = append(s.Members, SplitMember{
			Key: revision.Key{Namespace: o.Namespace, Name: t.RevisionName}, Percent: uint32(t.Percent), Tag: t.Tag,
		})
	}
	return s, nil
}

// backend is the thaw backend of one cluster or route: a Revision or a
// Split (exactly one is set).
type backend struct {
	rev   *Revision
	split *Split
}

// onlyBackend returns the single Revision or RevisionSplit among objects
// (other kinds are ignored). Errors: ErrNoRevision, ErrTooManyRevisions
// (more than one thaw backend in the rule), ParseRevision's or
// ParseSplit's.
func onlyBackend(objects [][]byte, o Options) (backend, error) {
	var revs, splits [][]byte
	for _, b := range objects {
		switch {
		case isRevision(b):
			revs = append(revs, b)
		case isSplit(b):
			splits = append(splits, b)
		}
	}
	switch {
	case len(revs)+len(splits) == 0:
		return backend{}, ErrNoRevision
	case len(revs)+len(splits) > 1:
		return backend{}, fmt.Errorf("%w (%d Revisions, %d RevisionSplits)", ErrTooManyRevisions, len(revs), len(splits))
	case len(revs) == 1:
		r, err := ParseRevision(revs[0], o.Defaults, o.Limits)
		return backend{rev: &r}, err
	default:
		s, err := ParseSplit(splits[0])
		return backend{split: &s}, err
	}
}

// key names the backend in logs.
func (b backend) key() string {
	if b.split != nil {
		return b.split.Key.String()
	}
	return b.rev.Key.String()
}
