package v1alpha1

import (
	"github.com/thaw-dev/thaw/wake"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Revision is one scalable workload version: a scale target (any object
// with a /scale subresource), how to reach its pods, and its autoscaling
// settings. thaw writes what it does into status only; the scale target is
// changed through its /scale subresource and nothing else.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,categories=thaw,shortName=rev
// +kubebuilder:printcolumn:name="Target",type=string,JSONPath=`.spec.scaleTargetRef.name`
// +kubebuilder:printcolumn:name="Mode",type=string,JSONPath=`.status.mode`
// +kubebuilder:printcolumn:name="Desired",type=integer,JSONPath=`.status.desiredScale`
// +kubebuilder:printcolumn:name="Ready",type=integer,JSONPath=`.status.actualScale`
// +kubebuilder:printcolumn:name="Active",type=string,JSONPath=`.status.conditions[?(@.type=="Active")].reason`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Revision struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   RevisionSpec   `json:"spec"`
	Status RevisionStatus `json:"status,omitempty"`
}

// RevisionList is a list of Revisions.
//
// +kubebuilder:object:root=true
type RevisionList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Revision `json:"items"`
}

// Protocol is what Envoy speaks to a revision's pods.
//
// +kubebuilder:validation:Enum=http1;h2c
type Protocol string

// Protocols.
const (
	ProtocolHTTP1 Protocol = "http1"
	ProtocolH2C   Protocol = "h2c"
)

// RevisionSpec is what a Revision asks for.
type RevisionSpec struct {
	// ScaleTargetRef names the object thaw scales through its /scale
	// subresource, in the Revision's namespace (Deployment, StatefulSet,
	// Argo Rollout...). The revision's pods are those selected by the
	// selector the /scale subresource reports (status.selector).
	ScaleTargetRef ScaleTargetRef `json:"scaleTargetRef"`

	// Port is the pods' HTTP port. Unset: the first TCP container port of
	// each pod.
	//
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	Port int32 `json:"port,omitempty"`

	// Protocol is what Envoy speaks to the pods: http1 (default) or h2c
	// (cleartext HTTP/2, gRPC).
	//
	// +optional
	Protocol Protocol `json:"protocol,omitempty"`

	// Hosts are the HTTP host names (optionally "*.suffix") thaw's own
	// Envoy fleet routes to this revision. Behind Envoy Gateway routing
	// comes from HTTPRoutes instead.
	//
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=253
	// +kubebuilder:validation:items:Pattern=`^(\*\.)?[A-Za-z0-9]([-A-Za-z0-9.]*[A-Za-z0-9])?\.?(:[0-9]{1,5})?$`
	Hosts []string `json:"hosts,omitempty"`

	// Autoscaling holds the autoscaling settings; every field is optional
	// and defaults to thaw's global default (docs/configuration.md).
	//
	// +optional
	Autoscaling Autoscaling `json:"autoscaling,omitempty"`

	// Traffic is this revision's share of a host it shares with other
	// revisions, and an optional tag host.
	//
	// +optional
	Traffic *Traffic `json:"traffic,omitempty"`

	// Wake is the revision's wake policy (off when unset).
	//
	// +optional
	Wake *wake.Config `json:"wake,omitempty"`
}

// ScaleTargetRef points at an object with a /scale subresource in the
// Revision's namespace.
type ScaleTargetRef struct {
	// APIVersion is the target's group/version ("apps/v1").
	//
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	APIVersion string `json:"apiVersion"`
	// Kind is the target's kind ("Deployment").
	//
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	Kind string `json:"kind"`
	// Name is the target's name.
	//
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
}

// Traffic is a revision's share of a shared host (thaw's own fleet).
type Traffic struct {
	// Percent is the share (0..100) of a shared host's requests this
	// revision takes; revisions sharing a host must sum to 100.
	//
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	Percent *int32 `json:"percent,omitempty"`
	// Tag gives the revision an extra host of its own (a DNS label).
	//
	// +optional
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Tag string `json:"tag,omitempty"`
}

// Autoscaling holds the same settings, under camelCase names and with the
// same ranges, as the autoscaling.thaw.dev/<key> annotations and the local
// YAML keys (docs/configuration.md). Durations are Go duration strings
// ("60s", "1m30s"). Unset fields take thaw's global defaults.
//
// +kubebuilder:validation:XValidation:rule="!has(self.minScale) || !has(self.maxScale) || self.maxScale == 0 || self.minScale <= self.maxScale",message="minScale must be <= maxScale (maxScale 0 = unlimited)"
// +kubebuilder:validation:XValidation:rule="!has(self.activationScale) || !has(self.maxScale) || self.maxScale == 0 || self.activationScale <= self.maxScale",message="activationScale must be <= maxScale (maxScale 0 = unlimited)"
type Autoscaling struct {
	// ContainerConcurrency is the hard limit of requests in flight per pod
	// (0 = unlimited), enforced by the activator.
	//
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1000
	ContainerConcurrency *int32 `json:"containerConcurrency,omitempty"`
	// Metric is what the decider scales on.
	//
	// +optional
	// +kubebuilder:validation:Enum=concurrency;rps
	Metric string `json:"metric,omitempty"`
	// Target is the desired requests in flight (or requests per second)
	// per pod.
	//
	// +optional
	// +kubebuilder:validation:Minimum=0.01
	Target *float64 `json:"target,omitempty"`
	// TargetUtilizationPercentage is the share of Target to aim for (1..100).
	//
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	TargetUtilizationPercentage *float64 `json:"targetUtilizationPercentage,omitempty"`
	// MinScale is the lowest replica count (0 allows scale to zero).
	//
	// +optional
	// +kubebuilder:validation:Minimum=0
	MinScale *int32 `json:"minScale,omitempty"`
	// MaxScale is the highest replica count (0 = unlimited).
	//
	// +optional
	// +kubebuilder:validation:Minimum=0
	MaxScale *int32 `json:"maxScale,omitempty"`
	// InitialScale is the replica count a new revision starts with.
	//
	// +optional
	// +kubebuilder:validation:Minimum=0
	InitialScale *int32 `json:"initialScale,omitempty"`
	// ActivationScale is the minimum replica count when waking from zero.
	//
	// +optional
	// +kubebuilder:validation:Minimum=1
	ActivationScale *int32 `json:"activationScale,omitempty"`
	// Window is the stable window (6s..1h).
	//
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('6s') && duration(self) <= duration('1h')",message="want a duration 6s..1h"
	Window *metav1.Duration `json:"window,omitempty"`
	// PanicWindowPercentage is the panic window as a share of Window
	// (1..100).
	//
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	PanicWindowPercentage *float64 `json:"panicWindowPercentage,omitempty"`
	// PanicThresholdPercentage is the desired/ready ratio, in percent,
	// that enters panic mode (110..1000).
	//
	// +optional
	// +kubebuilder:validation:Minimum=110
	// +kubebuilder:validation:Maximum=1000
	PanicThresholdPercentage *float64 `json:"panicThresholdPercentage,omitempty"`
	// ScaleDownDelay holds scale-downs back for this long (0..1h).
	//
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('0s') && duration(self) <= duration('1h')",message="want a duration 0s..1h"
	ScaleDownDelay *metav1.Duration `json:"scaleDownDelay,omitempty"`
	// MaxScaleUpRate caps growth per decision to ceil(rate x ready) (> 1).
	//
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:ExclusiveMinimum=true
	MaxScaleUpRate *float64 `json:"maxScaleUpRate,omitempty"`
	// MaxScaleDownRate caps shrinking per decision to floor(ready / rate)
	// (> 1).
	//
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:ExclusiveMinimum=true
	MaxScaleDownRate *float64 `json:"maxScaleDownRate,omitempty"`
	// TargetBurstCapacity is the spare capacity (requests) to keep before
	// the activator leaves the path: -1 = activator always in path, 0 =
	// activator only at zero.
	//
	// +optional
	// +kubebuilder:validation:XValidation:rule="self == -1.0 || self >= 0.0",message="want -1 or a number >= 0"
	TargetBurstCapacity *float64 `json:"targetBurstCapacity,omitempty"`
	// ScaleToZeroGracePeriod is the minimum time in proxy mode, confirmed
	// by every Envoy, before replicas go to 0 (0..1h).
	//
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('0s') && duration(self) <= duration('1h')",message="want a duration 0s..1h"
	ScaleToZeroGracePeriod *metav1.Duration `json:"scaleToZeroGracePeriod,omitempty"`
	// ScaleToZeroPodRetentionPeriod keeps the last pod this long after the
	// revision became idle (0..1h).
	//
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('0s') && duration(self) <= duration('1h')",message="want a duration 0s..1h"
	ScaleToZeroPodRetentionPeriod *metav1.Duration `json:"scaleToZeroPodRetentionPeriod,omitempty"`
	// ActivationTimeout scales a wake-up that produced no ready pod in
	// this time back to 0 (1s..1h).
	//
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1s') && duration(self) <= duration('1h')",message="want a duration 1s..1h"
	ActivationTimeout *metav1.Duration `json:"activationTimeout,omitempty"`
	// HoldTimeout is how long the activator holds one request before
	// answering 503 (1s..15m, and at most thaw's --hold-budget).
	//
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1s') && duration(self) <= duration('15m')",message="want a duration 1s..15m"
	HoldTimeout *metav1.Duration `json:"holdTimeout,omitempty"`
	// QueueDepth is how many requests the activator holds at once for
	// this revision (1..1000000).
	//
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000000
	QueueDepth *int32 `json:"queueDepth,omitempty"`
	// RequestTimeout bounds how long a pod may take to answer once the
	// request reached it (1s..24h).
	//
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1s') && duration(self) <= duration('24h')",message="want a duration 1s..24h"
	RequestTimeout *metav1.Duration `json:"requestTimeout,omitempty"`
	// IdleTimeout closes a request or connection idle this long (0..24h,
	// 0 = never).
	//
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('0s') && duration(self) <= duration('24h')",message="want a duration 0s..24h"
	IdleTimeout *metav1.Duration `json:"idleTimeout,omitempty"`
}

// Condition types of a Revision.
const (
	// ConditionReady is True when the Revision is valid and routed: thaw
	// serves it (through the activator while it has no ready pod).
	ConditionReady = "Ready"
	// ConditionActive is True while the revision has ready pods.
	ConditionActive = "Active"
)

// Condition reasons of a Revision.
const (
	ReasonRouted               = "Routed"
	ReasonInvalidConfiguration = "InvalidConfiguration"
	ReasonScaleTargetNotFound  = "ScaleTargetNotFound"
	// ReasonOtherAutoscaler: a HorizontalPodAutoscaler also scales the
	// target; thaw leaves it alone until that is removed.
	ReasonOtherAutoscaler = "ScaledByOtherAutoscaler"
	ReasonPending         = "Pending"
	ReasonServing         = "Serving"
	ReasonScaledToZero    = "ScaledToZero"
	ReasonWaking          = "Waking"
	// ReasonHostTakenBySplit (Ready True): thaw routes the Revision, but a
	// RevisionSplit with hosts takes one or more of the hosts it lists
	// (the split's traffic list decides there); the message names the
	// hosts and the split.
	ReasonHostTakenBySplit = "HostTakenBySplit"
	// ReasonNotRouted (Ready False): the Revision is valid, but the Envoy
	// translation of thaw's own fleet leaves it out (a host another
	// Revision holds, an invalid per-Revision traffic split on one of its
	// hosts), so thaw's Envoys do not route it; the message gives the
	// translation's reason (the same as `thaw status`).
	ReasonNotRouted = "NotRouted"
)

// Modes reported in RevisionStatus.Mode.
const (
	ModeServe   = "serve"
	ModeProxy   = "proxy"
	ModeInvalid = "invalid"
)

// RevisionStatus is what thaw observed and did, written by the leading
// thaw replica through the status subresource.
type RevisionStatus struct {
	// ObservedGeneration is the metadata.generation this status describes.
	//
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Mode is where Envoy sends the traffic: "serve" (straight to the
	// pods), "proxy" (through the activator) or "invalid".
	//
	// +optional
	// +kubebuilder:validation:Enum=serve;proxy;invalid
	Mode string `json:"mode,omitempty"`
	// DesiredScale is the autoscaler's last decision (pods); unset before
	// the first.
	//
	// +optional
	DesiredScale *int32 `json:"desiredScale,omitempty"`
	// ActualScale is the number of ready pods Envoy may route to.
	//
	// +optional
	ActualScale int32 `json:"actualScale"`
	// Selector is the scale target's pod selector as its /scale
	// subresource reports it.
	//
	// +optional
	Selector string `json:"selector,omitempty"`
	// Conditions: Ready and Active.
	//
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=8
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}
