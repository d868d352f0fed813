package egext

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/thaw-dev/thaw/api/v1alpha1"
	"github.com/thaw-dev/thaw/platform/revisionspec"
	"github.com/thaw-dev/thaw/revision"
	"github.com/thaw-dev/thaw/xds/translate"
)

// Group, Version and Kind of the backend resource thaw answers for.
const (
	Group      = "thaw.dev"
	Version    = "v1alpha1"
	Kind       = "Revision"
	APIVersion = Group + "/" + Version
)

// ErrNoRevision is returned when a hook request carries no Revision.
var ErrNoRevision = errors.New("egext: no thaw.dev Revision in the hook request")

// ErrTooManyRevisions is returned when one cluster or route carries more
// than one Revision: EG v1.9 puts every custom backendRef of a rule in one
// cluster (or, with a cluster per backendRef, drops their weights from the
// route), and no hook sees the weights, so thaw cannot split the rule. The
// route then answers 500 (InvalidRoute); give each Revision its own rule.
// docs/envoy-gateway.md has the evidence.
var ErrTooManyRevisions = errors.New("egext: more than one Revision in one route rule; EG v1.9 gives the hooks no backendRef weights, so thaw cannot split it: give each Revision its own rule")

// ErrInvalidRevision wraps every problem with a Revision object.
var ErrInvalidRevision = errors.New("egext: invalid Revision")

// Revision is what the hooks read from a Revision object: its key and its
// spec as the kube platform reads it (revisionspec.FromRevision: protocol,
// request, idle and hold timeouts, with thaw's defaults for unset fields).
type Revision struct {
	Key      revision.Key
	Protocol revision.Protocol
	// Timeouts are the Revision's route timeouts (translate.TimeoutsOf its spec).
	Timeouts translate.RouteTimeouts
}

// revisionObject is the part of an object's JSON used to tell its kind.
type revisionObject struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
}

// isRevision reports whether b (an unstructured object's JSON) is a
// thaw.dev Revision, of any version.
func isRevision(b []byte) bool {
	var o revisionObject
	if json.Unmarshal(b, &o) != nil {
		return false
	}
	return o.Kind == Kind && groupOf(o.APIVersion) == Group
}

// groupOf returns the API group of apiVersion ("thaw.dev/v1alpha1" ->
// "thaw.dev"), "" for the core group.
func groupOf(apiVersion string) string {
	group, _, found := strings.Cut(apiVersion, "/")
	if !found {
		return "" // a core-group apiVersion ("v1")
	}
	return group
}

// ParseRevision reads a Revision from an unstructured object's JSON (EG's
// ExtensionResource.unstructured_bytes) into the api/v1alpha1 type and
// converts its spec as the kube platform does (revisionspec.FromRevision)
// with defaults and lim: the same protocol, timeouts and ranges on both
// paths. Errors wrap ErrInvalidRevision: JSON that is no v1alpha1
// Revision, an empty name or namespace, or a spec thaw refuses (each
// problem names its field, "spec.autoscaling.requestTimeout").
func ParseRevision(b []byte, defaults revision.Spec, lim revision.Limits) (Revision, error) {
	var o v1alpha1.Revision
	if err := json.Unmarshal(b, &o); err != nil {
		return Revision{}, fmt.Errorf("%w: %w", ErrInvalidRevision, err)
	}
	if o.APIVersion != APIVersion || o.Kind != Kind {
		return Revision{}, fmt.Errorf("%w: %s %s, want %s %s", ErrInvalidRevision, o.APIVersion, o.Kind, APIVersion, Kind)
	}
	if o.Name == "" || o.Namespace == "" {
		return Revision{}, fmt.Errorf("%w: metadata.name and metadata.namespace are required", ErrInvalidRevision)
	}
	key := revision.Key{Namespace: o.Namespace, Name: o.Name}
	spec, err := revisionspec.FromRevision(defaults, lim, &o)
	if err != nil {
		return Revision{}, fmt.Errorf("%w: %s: %w", ErrInvalidRevision, key, err)
	}
	return Revision{Key: key, Protocol: spec.Protocol, Timeouts: translate.TimeoutsOf(&spec)}, nil
}
