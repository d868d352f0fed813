package v1alpha1

// WakePolicy is a Revision's wake policy: requests that must not wake it
// at zero, the waiting page for browsers, the cold-start header and warm
// windows. It has the shape of the local YAML's wake: block
// (docs/configuration.md, "Wake policy"). The schema bounds sizes and
// names at admission; thaw checks regular expressions, cron expressions
// and time zones and reports a bad one in the Ready condition.
type WakePolicy struct {
	// Rules are tried in order; the first that matches a request for the
	// revision at zero answers it without waking the revision.
	//
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=64
	Rules []WakeRule `json:"rules,omitempty"`
	// WaitingPage answers browser navigations at zero with an HTML page
	// that reloads itself while the revision wakes.
	//
	// +optional
	WaitingPage *WaitingPage `json:"waitingPage,omitempty"`
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
	Schedule []WarmWindow `json:"schedule,omitempty"`
}

// WakeRule matches requests by anchored RE2 regular expressions; every
// matcher given must match, at least one is required.
//
// +kubebuilder:validation:XValidation:rule="has(self.path) || has(self.method) || has(self.userAgent) || has(self.headers)",message="want at least one of path, method, userAgent, headers"
type WakeRule struct {
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
	Response *WakeResponse `json:"response,omitempty"`
}

// WakeResponse is a static response.
type WakeResponse struct {
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

// WaitingPage is the page browsers get while a revision wakes.
type WaitingPage struct {
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

// WarmWindow keeps at least MinScale replicas for Duration after each time
// Start fires.
type WarmWindow struct {
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
