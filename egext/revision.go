package egext

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/thaw-dev/thaw/revision"
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

// Revision is what the hooks read from a Revision object: its key and the
// protocol Envoy speaks to its backends.
type Revision struct {
	Key      revision.Key
	Protocol revision.Protocol
}

// revisionObject is the part of a Revision's JSON the hooks use.
type revisionObject struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name      string `json:"name"`
		Namespace string `json:"namespace"`
	} `json:"metadata"`
	Spec struct {
		Protocol string `json:"protocol"`
	} `json:"spec"`
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

func groupOf(apiVersion string) string {
	for i := 0; i < len(apiVersion); i++ {
		if apiVersion[i] == '/' {
			return apiVersion[:i]
		}
	}
	return ""
}

// ParseRevision reads a Revision from an unstructured object's JSON (EG's
// ExtensionResource.unstructured_bytes). Errors wrap ErrInvalidRevision:
// another apiVersion, an empty name or namespace, a protocol other than
// "", "http1" or "h2c" (empty means http1).
func ParseRevision(b []byte) (Revision, error) {
	var o revisionObject
	if err := json.Unmarshal(b, &o); err != nil {
		return Revision{}, fmt.Errorf("%w: %w", ErrInvalidRevision, err)
	}
	if o.APIVersion != APIVersion || o.Kind != Kind {
		return Revision{}, fmt.Errorf("%w: %s %s, want %s %s", ErrInvalidRevision, o.APIVersion, o.Kind, APIVersion, Kind)
	}
	if o.Metadata.Name == "" || o.Metadata.Namespace == "" {
		return Revision{}, fmt.Errorf("%w: metadata.name and metadata.namespace are required", ErrInvalidRevision)
	}
	r := Revision{Key: revision.Key{Namespace: o.Metadata.Namespace, Name: o.Metadata.Name}, Protocol: revision.ProtocolHTTP1}
	switch p := revision.Protocol(o.Spec.Protocol); p {
	case "", revision.ProtocolHTTP1:
	case revision.ProtocolH2C:
		r.Protocol = p
	default:
		return Revision{}, fmt.Errorf("%w: %s: spec.protocol %q, want \"http1\" or \"h2c\"", ErrInvalidRevision, r.Key, p)
	}
	return r, nil
}

// onlyRevision returns the single Revision among objects (other kinds,
// e.g. extension filters, are ignored). Errors: ErrNoRevision,
// ErrTooManyRevisions, or ParseRevision's.
func onlyRevision(objects [][]byte) (Revision, error) {
	var found [][]byte
	for _, b := range objects {
		if isRevision(b) {
			found = append(found, b)
		}
	}
	switch len(found) {
	case 0:
		return Revision{}, ErrNoRevision
	case 1:
		return ParseRevision(found[0])
	default:
		return Revision{}, fmt.Errorf("%w (%d Revisions)", ErrTooManyRevisions, len(found))
	}
}
