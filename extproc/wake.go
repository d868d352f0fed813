package extproc

import (
	"errors"
	"strconv"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/thaw-dev/thaw/activator"
	"github.com/thaw-dev/thaw/revision"
	"github.com/thaw-dev/thaw/wake"
)

// ColdStartField is the dynamic metadata field (in MetadataNamespace) with
// the milliseconds a request was held, written only for held requests of
// revisions whose wake policy sets coldStartHeader. The activator
// listener's route copies it into the wake.HeaderColdStart response header
// (an empty value adds no header) and thaw_http's access log reads that
// header.
const ColdStartField = "cold_start_ms"

// Outcomes of wake policy answers (thaw_extproc_responses_total).
const (
	outcomeWakeRule    = "wake_rule"
	outcomeWaitingPage = "waiting_page"
)

// wakeMetrics count wake policy answers per revision and rule. Both label
// sets are bounded by the configuration (rules per revision are capped).
type wakeMetrics struct {
	rules *prometheus.CounterVec
	pages *prometheus.CounterVec
}

func newWakeMetrics() *wakeMetrics {
	return &wakeMetrics{
		rules: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "thaw", Subsystem: "wake", Name: "rule_responses_total",
			Help: "Requests for a revision at zero answered by a wake policy rule without waking it, by revision and rule.",
		}, []string{"revision", "rule"}),
		pages: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "thaw", Subsystem: "wake", Name: "waiting_pages_total",
			Help: "Browser navigations to a revision at zero answered with the waiting page (the revision wakes), by revision.",
		}, []string{"revision"}),
	}
}

func (m *wakeMetrics) register(r prometheus.Registerer) error {
	return errors.Join(r.Register(m.rules), r.Register(m.pages))
}

// wakeAnswer applies revision key's wake policy to a request before it is
// held: nil (hold as usual) when the revision has no policy or is awake.
// It costs one atomic load for revisions without a policy.
func (s *Server) wakeAnswer(key revision.Key, h *extprocv3.HttpHeaders) (*extprocv3.ProcessingResponse, string) {
	pol, atZero := s.opts.Activator.WakePolicy(key)
	if !atZero || !pol.ReadsRequests() {
		return nil, ""
	}
	hl := headerList(h.GetHeaders().GetHeaders())
	method, _ := hl.get(":method")
	path, _ := hl.get(":path")
	action, rule := pol.Evaluate(wake.Request{Method: method, Path: path, Header: hl.get})
	switch action {
	case wake.Static:
		s.wake.rules.WithLabelValues(key.String(), rule.Name).Inc()
		if rule.Response == nil {
			return s.answers.asleep, outcomeWakeRule
		}
		return staticResponse(rule.Response.Status, rule.Response.Headers, rule.Response.Body, "thaw_wake_rule", 0), outcomeWakeRule
	case wake.WaitingPage:
		s.opts.Activator.Wake(key)
		s.wake.pages.WithLabelValues(key.String()).Inc()
		var ra time.Duration
		if pol.Page.Status == 503 {
			ra = pol.Page.Refresh
		}
		hdrs := []wake.Header{{Name: "content-type", Value: "text/html; charset=utf-8"}, {Name: "cache-control", Value: "no-store"}}
		return staticResponse(pol.Page.Status, hdrs, pol.Page.Body, "thaw_wake_waiting_page", ra), outcomeWaitingPage
	default:
		return nil, ""
	}
}

// staticResponse builds a local reply from a wake policy's response.
// retryAfter > 0 adds Retry-After (whole seconds, at least 1).
func staticResponse(status int, headers []wake.Header, body, details string, retryAfter time.Duration) *extprocv3.ProcessingResponse {
	set := make([]*corev3.HeaderValueOption, 0, len(headers)+1)
	for _, h := range headers {
		set = append(set, &corev3.HeaderValueOption{
			Header:       &corev3.HeaderValue{Key: h.Name, RawValue: []byte(h.Value)},
			AppendAction: corev3.HeaderValueOption_OVERWRITE_IF_EXISTS_OR_ADD,
		})
	}
	if retryAfter > 0 {
		secs := int64((retryAfter + time.Second - 1) / time.Second)
		set = append(set, &corev3.HeaderValueOption{
			Header:       &corev3.HeaderValue{Key: "retry-after", RawValue: []byte(strconv.FormatInt(secs, 10))},
			AppendAction: corev3.HeaderValueOption_OVERWRITE_IF_EXISTS_OR_ADD,
		})
	}
	return &extprocv3.ProcessingResponse{Response: &extprocv3.ProcessingResponse_ImmediateResponse{ImmediateResponse: &extprocv3.ImmediateResponse{
		Status:  &typev3.HttpStatus{Code: typev3.StatusCode(status)},
		Headers: &extprocv3.HeaderMutation{SetHeaders: set},
		Body:    []byte(body),
		Details: details,
	}}}
}

// coldStartRoute is the routing answer for a request held for d, carrying
// ColdStartField (a new message: held requests are the slow path anyway).
func coldStartRoute(addr string, short bool, d time.Duration) *extprocv3.ProcessingResponse {
	r := routeTo(addr, short)
	ns := r.DynamicMetadata.Fields[MetadataNamespace].GetStructValue()
	ns.Fields[ColdStartField] = structpb.NewStringValue(strconv.FormatInt(d.Milliseconds(), 10))
	return r
}

// headerList looks up request headers sent by Envoy (lower-case names,
// values in raw_value or value).
type headerList []*corev3.HeaderValue

func (l headerList) get(name string) (string, bool) {
	for _, hv := range l {
		if hv.GetKey() == name {
			if len(hv.GetRawValue()) > 0 {
				return string(hv.GetRawValue()), true
			}
			return hv.GetValue(), true
		}
	}
	return "", false
}

// coldStart returns the routing answer for a request of revision key that
// was held for d: with ColdStartField when its policy asks for the header.
func (s *Server) coldStart(key revision.Key, pod activator.Pod, d time.Duration) *extprocv3.ProcessingResponse {
	if pol, _ := s.opts.Activator.WakePolicy(key); pol == nil || !pol.ColdStartHeader {
		return s.routes.to(pod.Address, !pod.Tracked)
	}
	return coldStartRoute(pod.Address, !pod.Tracked, d)
}

// CountWakeAnswers adds n requests of revision key answered by its wake
// policy's rule (page false) or waiting page (page true) to the same
// metrics the ext_proc path counts (thaw_wake_rule_responses_total,
// thaw_wake_waiting_pages_total): the in-Envoy module reports its own
// answers through modsvc. Callers pass only rule names of the revision's
// policy, so the label set stays bounded by the configuration.
func (s *Server) CountWakeAnswers(key revision.Key, rule string, page bool, n int64) {
	if n <= 0 {
		return
	}
	if page {
		s.wake.pages.WithLabelValues(key.String()).Add(float64(n))
		return
	}
	s.wake.rules.WithLabelValues(key.String(), rule).Add(float64(n))
}
