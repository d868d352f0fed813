package wake

// The Config types below are the one definition of a wake policy's shape:
// the local YAML file's wake: block, the wake.thaw.dev/policy annotation,
// the state stream to the in-Envoy module and a Revision's spec.wake
// (api/v1alpha1 uses Config as the field's type). The kubebuilder markers
// are the Revision CRD's schema: controller-gen reads them from here, and
// `make generate` writes the CRD and zz_generated.deepcopy.go. The API
// package refers to this one and not the other way round, so that the
// module loaded into Envoy, which compiles policies, does not link
// apimachinery. The schema bounds sizes and names at admission; Compile
// checks everything (regular expressions, cron expressions, time zones)
// for every source, within the Max* bounds of config.go.
//
// Beyond the field docs (which are the CRD's descriptions): the zero
// Config is no policy; a rule's regular expressions must match the whole
// value, and a request without the User-Agent or a header a rule names
// does not match it; MatchableHeader says which header names a rule may
// use (holders see only those).

// Config is a revision's wake policy: requests that must not wake it at
// zero, the waiting page for browsers, the cold-start header and warm
// windows. It has the shape of the local YAML's wake: block
// (docs/configuration.md, "Wake policy"). The schema bounds sizes and
// names at admission; thaw checks regular expressions, cron expressions
// and time zones and reports a bad one in the Ready condition.
//
// +kubebuilder:object:generate=true
type Config struct {
	// Rules are tried in order; the first that matches a request for the
	// revision at zero answers it without waking the revision.
	//
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=64
	Rules []RuleConfig `json:"rules,omitempty"`
	// WaitingPage answers browser navigations at zero with an HTML page
	// that reloads itself while the revision wakes.
	//
	// +optional
	WaitingPage *PageConfig `json:"waitingPage,omitempty"`
	// ColdStartHeader adds x-thaw-cold-start (milliseconds held) to the
	// response of every held request.
	//
	// +optional
	ColdStartHeader bool `json:"coldStartHeader,omitempty"`
	// Schedule lists warm windows.
	//
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=16
	Schedule []WindowConfig `json:"schedule,omitempty"`
}

// RuleConfig matches requests by anchored RE2 regular expressions; every
// matcher given must match, at least one is required.
//
// +kubebuilder:object:generate=true
// +kubebuilder:validation:XValidation:rule="has(self.path) || has(self.method) || has(self.userAgent) || has(self.headers)",message="want at least one of path, method, userAgent, headers"
type RuleConfig struct {
	// Name labels the rule in metrics (a DNS label).
	//
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Name string `json:"name"`
	// Path matches the request path without its query string.
	//
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Path string `json:"path,omitempty"`
	// Method matches the HTTP method ("GET|HEAD").
	//
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Method string `json:"method,omitempty"`
	// UserAgent matches the User-Agent header ("kube-probe/.*").
	//
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	UserAgent string `json:"userAgent,omitempty"`
	// Headers maps lower-case header names (accept, content-type, upgrade
	// or x-*) to regular expressions.
	//
	// +optional
	// +kubebuilder:validation:MaxProperties=16
	Headers map[string]string `json:"headers,omitempty"`
	// Response is the static answer; unset: 503 with Retry-After.
	//
	// +optional
	Response *ResponseConfig `json:"response,omitempty"`
}

// ResponseConfig is a static response.
//
// +kubebuilder:object:generate=true
type ResponseConfig struct {
	// Status is the HTTP status code.
	//
	// +kubebuilder:validation:Minimum=200
	// +kubebuilder:validation:Maximum=599
	Status int32 `json:"status"`
	// Headers are added to the response.
	//
	// +optional
	// +kubebuilder:validation:MaxProperties=16
	Headers map[string]string `json:"headers,omitempty"`
	// Body is sent as is.
	//
	// +optional
	// +kubebuilder:validation:MaxLength=65536
	Body string `json:"body,omitempty"`
}

// PageConfig is the page browsers get while a revision wakes.
//
// +kubebuilder:object:generate=true
type PageConfig struct {
	// Status of the page (default 503, with Retry-After).
	//
	// +optional
	// +kubebuilder:validation:Minimum=200
	// +kubebuilder:validation:Maximum=599
	Status int32 `json:"status,omitempty"`
	// Refresh is the reload period ("2s", 1s..60s).
	//
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1s') && duration(self) <= duration('60s')",message="want a duration 1s..60s"
	Refresh string `json:"refresh,omitempty"`
	// Body replaces the default page; {{refresh}} is replaced by the
	// period in seconds.
	//
	// +optional
	// +kubebuilder:validation:MaxLength=65536
	Body string `json:"body,omitempty"`
}

// WindowConfig keeps at least MinScale replicas for Duration after each
// time Start fires.
//
// +kubebuilder:object:generate=true
type WindowConfig struct {
	// Name labels the window in `thaw status` (a DNS label).
	//
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Name string `json:"name"`
	// Start is a five-field cron expression ("0 8 * * 1-5") or a
	// descriptor (@daily).
	//
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	Start string `json:"start"`
	// Duration is how long the window stays open (1m..168h).
	//
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1m') && duration(self) <= duration('168h')",message="want a duration 1m..168h"
	Duration string `json:"duration"`
	// TimeZone is an IANA time zone name (default UTC).
	//
	// +optional
	// +kubebuilder:validation:MaxLength=64
	TimeZone string `json:"timeZone,omitempty"`
	// MinScale is the minimum replica count inside the window.
	//
	// +kubebuilder:validation:Minimum=1
	MinScale int32 `json:"minScale"`
}
