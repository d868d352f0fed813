package revisionspec

import (
	"errors"
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/thaw-dev/thaw/api/v1alpha1"
	"github.com/thaw-dev/thaw/revision"
)

// settingField maps one field of v1alpha1.Autoscaling to the setting key the
// annotations and the local YAML use, so a Revision goes through the same
// parser and validation (revision.ParseSettingsWithin) as every other
// source.
type settingField struct {
	key  string // revision.Key* (bare)
	json string // field name under spec.autoscaling
	get  func(a *v1alpha1.Autoscaling) (string, bool)
}

func i32(p *int32) (string, bool) {
	if p == nil {
		return "", false
	}
	return strconv.FormatInt(int64(*p), 10), true
}

func f64(p *float64) (string, bool) {
	if p == nil {
		return "", false
	}
	return strconv.FormatFloat(*p, 'g', -1, 64), true
}

func dur(p *metav1.Duration) (string, bool) {
	if p == nil {
		return "", false
	}
	return p.Duration.String(), true
}

// settingFields lists every autoscaling field of a Revision. A unit test
// checks that it covers every field of v1alpha1.Autoscaling and only known
// setting keys.
var settingFields = []settingField{
	{revision.KeyContainerConcurrency, "containerConcurrency", func(a *v1alpha1.Autoscaling) (string, bool) { return i32(a.ContainerConcurrency) }},
	{revision.KeyMetric, "metric", func(a *v1alpha1.Autoscaling) (string, bool) { return a.Metric, a.Metric != "" }},
	{revision.KeyTarget, "target", func(a *v1alpha1.Autoscaling) (string, bool) { return f64(a.Target) }},
	{revision.KeyTargetUtilization, "targetUtilizationPercentage", func(a *v1alpha1.Autoscaling) (string, bool) { return f64(a.TargetUtilizationPercentage) }},
	{revision.KeyMinScale, "minScale", func(a *v1alpha1.Autoscaling) (string, bool) { return i32(a.MinScale) }},
	{revision.KeyMaxScale, "maxScale", func(a *v1alpha1.Autoscaling) (string, bool) { return i32(a.MaxScale) }},
	{revision.KeyInitialScale, "initialScale", func(a *v1alpha1.Autoscaling) (string, bool) { return i32(a.InitialScale) }},
	{revision.KeyActivationScale, "activationScale", func(a *v1alpha1.Autoscaling) (string, bool) { return i32(a.ActivationScale) }},
	{revision.KeyWindow, "window", func(a *v1alpha1.Autoscaling) (string, bool) { return dur(a.Window) }},
	{revision.KeyPanicWindowPercentage, "panicWindowPercentage", func(a *v1alpha1.Autoscaling) (string, bool) { return f64(a.PanicWindowPercentage) }},
	{revision.KeyPanicThresholdPercentage, "panicThresholdPercentage", func(a *v1alpha1.Autoscaling) (string, bool) { return f64(a.PanicThresholdPercentage) }},
	{revision.KeyScaleDownDelay, "scaleDownDelay", func(a *v1alpha1.Autoscaling) (string, bool) { return dur(a.ScaleDownDelay) }},
	{revision.KeyMaxScaleUpRate, "maxScaleUpRate", func(a *v1alpha1.Autoscaling) (string, bool) { return f64(a.MaxScaleUpRate) }},
	{revision.KeyMaxScaleDownRate, "maxScaleDownRate", func(a *v1alpha1.Autoscaling) (string, bool) { return f64(a.MaxScaleDownRate) }},
	{revision.KeyTargetBurstCapacity, "targetBurstCapacity", func(a *v1alpha1.Autoscaling) (string, bool) { return f64(a.TargetBurstCapacity) }},
	{revision.KeyScaleToZeroGracePeriod, "scaleToZeroGracePeriod", func(a *v1alpha1.Autoscaling) (string, bool) { return dur(a.ScaleToZeroGracePeriod) }},
	{revision.KeyScaleToZeroPodRetention, "scaleToZeroPodRetentionPeriod", func(a *v1alpha1.Autoscaling) (string, bool) { return dur(a.ScaleToZeroPodRetentionPeriod) }},
	{revision.KeyActivationTimeout, "activationTimeout", func(a *v1alpha1.Autoscaling) (string, bool) { return dur(a.ActivationTimeout) }},
	{revision.KeyHoldTimeout, "holdTimeout", func(a *v1alpha1.Autoscaling) (string, bool) { return dur(a.HoldTimeout) }},
	{revision.KeyQueueDepth, "queueDepth", func(a *v1alpha1.Autoscaling) (string, bool) { return i32(a.QueueDepth) }},
	{revision.KeyRequestTimeout, "requestTimeout", func(a *v1alpha1.Autoscaling) (string, bool) { return dur(a.RequestTimeout) }},
	{revision.KeyIdleTimeout, "idleTimeout", func(a *v1alpha1.Autoscaling) (string, bool) { return dur(a.IdleTimeout) }},
}

// revisionFieldPaths maps setting keys (and the Spec fields Validate names)
// to the Revision field a user wrote.
var revisionFieldPaths = func() map[string]string {
	m := map[string]string{
		"hosts":                      "spec.hosts",
		"port":                       "spec.port",
		revision.KeyProtocol:         "spec.protocol",
		revision.FieldTrafficPercent: "spec.traffic.percent",
		revision.FieldTag:            "spec.traffic.tag",
	}
	for _, f := range settingFields {
		m[f.key] = "spec.autoscaling." + f.json
	}
	return m
}()

// FromRevision translates a Revision into the revision.Spec the
// annotation path would produce for the same settings: defaults supply
// every setting not given, and the result is validated against lim by
// revision.ParseSettingsWithin, so both sources share one set of ranges.
// The CRD's schema rejects most bad values at admission already; this
// check is what protects thaw from objects stored before a schema change
// or written with validation off. The error joins every problem; each is
// a *revision.FieldError naming the Revision field ("spec.autoscaling.target")
// and wraps revision.ErrInvalidSpec. spec.traffic sets the revision's
// share of a shared host and its tag (docs/traffic-splitting.md).
func FromRevision(defaults revision.Spec, lim revision.Limits, r *v1alpha1.Revision) (revision.Spec, error) {
	// spec.hosts is optional: a Revision that Envoy Gateway routes to (an
	// HTTPRoute backendRef) has none.
	lim.AllowNoHosts = true
	base := defaults
	base.Hosts = append([]string(nil), r.Spec.Hosts...)
	base.Port = r.Spec.Port
	if t := r.Spec.Traffic; t != nil {
		if t.Percent != nil {
			p := *t.Percent
			base.TrafficPercent = &p
		}
		base.Tag = t.Tag
	}
	settings := make(map[string]string, len(settingFields)+1)
	if r.Spec.Protocol != "" {
		settings[revision.KeyProtocol] = string(r.Spec.Protocol)
	}
	for _, f := range settingFields {
		if v, ok := f.get(&r.Spec.Autoscaling); ok {
			settings[f.key] = v
		}
	}
	spec, err := revision.ParseSettingsWithin(base, settings, lim)
	pol, werr := wakeFromRevision(r.Spec.Wake)
	spec.Wake = pol
	if err == nil {
		return spec, werr
	}
	var out []error
	for _, e := range unjoin(err) {
		var fe *revision.FieldError
		if errors.As(e, &fe) {
			if path, ok := revisionFieldPaths[fe.Field]; ok {
				fe.Field = path
			}
		}
		out = append(out, e)
	}
	return spec, errors.Join(append(out, werr)...)
}

// unjoin returns the errors inside an errors.Join result, or err itself.
func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}
