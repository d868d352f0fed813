package revisionspec

import (
	"errors"

	"github.com/thaw-dev/thaw/api/v1alpha1"
	"github.com/thaw-dev/thaw/revision"
	"github.com/thaw-dev/thaw/wake"
)

// wakeFromRevision compiles spec.wake; each problem is a
// *revision.FieldError under "spec.wake." (a nil policy when unset).
func wakeFromRevision(w *v1alpha1.WakePolicy) (*wake.Policy, error) {
	if w == nil {
		return nil, nil
	}
	c := &wake.Config{ColdStartHeader: w.ColdStartHeader}
	for _, r := range w.Rules {
		rc := wake.RuleConfig{Name: r.Name, Path: r.Path, Method: r.Method, UserAgent: r.UserAgent, Headers: r.Headers}
		if r.Response != nil {
			rc.Response = &wake.ResponseConfig{Status: int(r.Response.Status), Headers: r.Response.Headers, Body: r.Response.Body}
		}
		c.Rules = append(c.Rules, rc)
	}
	if p := w.WaitingPage; p != nil {
		c.WaitingPage = &wake.PageConfig{Status: int(p.Status), Refresh: p.Refresh, Body: p.Body}
	}
	for _, s := range w.Schedule {
		c.Schedule = append(c.Schedule, wake.WindowConfig{Name: s.Name, Start: s.Start, Duration: s.Duration,
			TimeZone: s.TimeZone, MinScale: s.MinScale})
	}
	pol, errs := wake.Compile(c)
	out := make([]error, 0, len(errs))
	for _, err := range errs {
		var fe *wake.FieldError
		if errors.As(err, &fe) {
			out = append(out, &revision.FieldError{Field: "spec.wake." + fe.Field, Value: fe.Value, Allowed: fe.Allowed})
			continue
		}
		out = append(out, err)
	}
	return pol, errors.Join(out...)
}
