package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// RevisionSplit splits one route's requests between Revisions by percent,
// in Knative's terms (a traffic list of revisionName, percent and tag).
// Behind Envoy Gateway it is the one backendRef of an HTTPRoute rule
// (group thaw.dev, kind RevisionSplit): thaw's hooks turn the rule's route
// into weighted clusters, one per Revision (docs/traffic-splitting.md).
// The name says what it is: a split of Revisions, not a Gateway API route.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,categories=thaw,shortName=rsplit
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type RevisionSplit struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   RevisionSplitSpec   `json:"spec"`
	Status RevisionSplitStatus `json:"status,omitempty"`
}

// RevisionSplitList is a list of RevisionSplits.
//
// +kubebuilder:object:root=true
type RevisionSplitList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []RevisionSplit `json:"items"`
}

// RevisionSplitSpec is the split: every Revision named once, percents
// summing to 100.
type RevisionSplitSpec struct {
	// Traffic lists the Revisions (in the RevisionSplit's namespace) and
	// their shares. A 0% entry gets no request of the split (it scales to
	// zero) but keeps its tag host.
	//
	// +listType=map
	// +listMapKey=revisionName
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:XValidation:rule="self.map(t, t.percent).sum() == 100",message="traffic percents must sum to 100"
	// +kubebuilder:validation:XValidation:rule="self.filter(t, has(t.tag)).all(t, self.filter(u, has(u.tag) && u.tag == t.tag).size() == 1)",message="each tag must be unique"
	Traffic []TrafficTarget `json:"traffic"`

	// Hosts are the HTTP host names (optionally "*.suffix") whose
	// requests thaw's own Envoy fleet (thaw run) splits between the
	// Revisions: the split is then the one source of truth of these
	// hosts; a Revision listing one of them loses it to the split, and
	// its traffic.percent does not apply there. Each entry's tag gives it
	// "<tag>-<host>" for each host that is not a wildcard. Behind Envoy
	// Gateway hosts come from the HTTPRoute and this field is ignored:
	// use one or the other (docs/traffic-splitting.md).
	//
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MaxLength=253
	// +kubebuilder:validation:items:Pattern=`^(\*\.)?[A-Za-z0-9]([-A-Za-z0-9.]*[A-Za-z0-9])?\.?(:[0-9]{1,5})?$`
	Hosts []string `json:"hosts,omitempty"`

	// Protocol is what Envoy speaks to every Revision of the split: http1
	// (default) or h2c. It must match the Revisions' spec.protocol
	// (Envoy Gateway hands thaw's hooks the RevisionSplit only).
	//
	// +optional
	Protocol Protocol `json:"protocol,omitempty"`
}

// TrafficTarget is one Revision's share of a RevisionSplit.
type TrafficTarget struct {
	// RevisionName names a Revision in the RevisionSplit's namespace.
	//
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`
	RevisionName string `json:"revisionName"`
	// Percent is the share (0..100) of the route's requests.
	//
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	Percent int32 `json:"percent"`
	// Tag gives the Revision an extra host of its own: "<tag>-<host>" for
	// each host of the HTTPRoute (a DNS label).
	//
	// +optional
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Tag string `json:"tag,omitempty"`
}

// Condition reasons of a RevisionSplit (condition type ConditionReady).
// A split whose Revision is scaled by another autoscaler has reason
// ReasonOtherAutoscaler; one still waiting for thaw to publish a Revision
// that exists has ReasonPending (status Unknown).
const (
	// ReasonRevisionNotFound: a Revision of the split does not exist.
	ReasonRevisionNotFound = "RevisionNotFound"
	// ReasonInvalidSplit: the split breaks a rule (sum, duplicates).
	ReasonInvalidSplit = "InvalidSplit"
	// ReasonRevisionInvalid: a Revision of the split exists but thaw
	// refuses its configuration (its own Ready condition says why).
	ReasonRevisionInvalid = "RevisionInvalid"
	// ReasonResolved: every Revision exists and the split is valid.
	ReasonResolved = "Resolved"
)

// RevisionSplitStatus is what thaw observed, written by the leading thaw
// replica through the status subresource.
type RevisionSplitStatus struct {
	// ObservedGeneration is the metadata.generation this status describes.
	//
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Conditions: Ready.
	//
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=8
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// Traffic is spec.traffic as thaw resolved it, in the same order: each
	// entry's Revision and share, and whether thaw routes that Revision.
	//
	// +optional
	// +kubebuilder:validation:MaxItems=16
	Traffic []TrafficTargetStatus `json:"traffic,omitempty"`
	// Hosts are the hosts thaw's own Envoy fleet routes to the split
	// (spec.hosts in normal form, then the tag hosts), empty while it
	// does not route them.
	//
	// +optional
	// +kubebuilder:validation:MaxItems=272
	Hosts []string `json:"hosts,omitempty"`
}

// ReasonSplitConflict: a Revision, host or tag host of the split belongs
// to a RevisionSplit with hosts created earlier (thaw's own fleet).
const ReasonSplitConflict = "SplitConflict"

// TrafficTargetStatus is how thaw resolved one traffic entry of a
// RevisionSplit.
type TrafficTargetStatus struct {
	// RevisionName, Percent and Tag repeat the spec's entry.
	RevisionName string `json:"revisionName"`
	Percent      int32  `json:"percent"`
	// +optional
	Tag string `json:"tag,omitempty"`
	// Reason is Routed when thaw routes the Revision (serving or scaled to
	// zero), else why not: RevisionNotFound, ScaledByOtherAutoscaler,
	// RevisionInvalid or Pending.
	Reason string `json:"reason"`
}

// ReasonRevisionNotRouted: the registry accepts the split (a RevisionSplit
// with hosts, thaw's own fleet) but the Envoy translation left a Revision
// of it out (a host collision, an invalid per-Revision traffic split on
// another of its hosts), so the split's hosts answer 404. The condition's
// message names each Revision left out and why; status.traffic gives
// those entries this reason.
const ReasonRevisionNotRouted = "RevisionNotRouted"
