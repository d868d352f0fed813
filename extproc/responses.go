package extproc

import (
	"fmt"
	"strconv"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	filterv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_proc/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/structpb"
)

// MetadataNamespace is the dynamic metadata namespace the answer writes the
// backend into; Envoy's ext_proc filter must list it in
// metadata_options.receiving_namespaces.untyped and the ORIGINAL_DST cluster
// reads it with metadata_key {key: MetadataNamespace, path: [MetadataField]}.
const (
	MetadataNamespace = "thaw.activator"
	MetadataField     = "destination"
)

// RevisionHeader names the revision a request is for ("namespace/name"). The
// revision's route sets it, overwriting any client copy.
const RevisionHeader = "x-thaw-revision"

// outcome labels of responses (metrics and ImmediateResponse details).
const (
	outcomeRouted          = "routed"
	outcomeQueueFull       = "queue_full"
	outcomeHeldLimit       = "held_limit"
	outcomeHoldTimeout     = "hold_timeout"
	outcomeShuttingDown    = "shutting_down"
	outcomeUnknownRevision = "unknown_revision"
	outcomeBadRequest      = "bad_request"
	outcomeCanceled        = "canceled"
)

// ShortMode is the processing mode an answer switches a stream to when the
// request's end need not be tracked (ProcessingResponse.mode_override):
// nothing after the request headers, so Envoy closes the stream once it
// has the answer. The filter must allow it (allow_mode_override and
// allowed_override_modes, see xds/translate ExtProcFilter), else Envoy ignores it and
// the server's own return ends the stream.
func ShortMode() *filterv3.ProcessingMode {
	return &filterv3.ProcessingMode{
		RequestHeaderMode:   filterv3.ProcessingMode_SEND,
		ResponseHeaderMode:  filterv3.ProcessingMode_SKIP,
		RequestBodyMode:     filterv3.ProcessingMode_NONE,
		ResponseBodyMode:    filterv3.ProcessingMode_NONE,
		RequestTrailerMode:  filterv3.ProcessingMode_SKIP,
		ResponseTrailerMode: filterv3.ProcessingMode_SKIP,
	}
}

// routeTo is the answer to request headers when a backend was chosen:
// continue, and name the backend in dynamic metadata for ORIGINAL_DST, which
// reads it when the router picks the host, after this filter. short adds
// the mode_override to ShortMode. No clear_route_cache: routing does not
// depend on it, and Envoy 1.40 ignores it without a header mutation.
func routeTo(addr string, short bool) *extprocv3.ProcessingResponse {
	r := &extprocv3.ProcessingResponse{
		Response: &extprocv3.ProcessingResponse_RequestHeaders{RequestHeaders: &extprocv3.HeadersResponse{
			Response: &extprocv3.CommonResponse{Status: extprocv3.CommonResponse_CONTINUE},
		}},
		DynamicMetadata: &structpb.Struct{Fields: map[string]*structpb.Value{
			MetadataNamespace: structpb.NewStructValue(&structpb.Struct{Fields: map[string]*structpb.Value{
				MetadataField: structpb.NewStringValue(addr),
			}}),
		}},
	}
	if short {
		r.ModeOverride = ShortMode()
	}
	return r
}

// holdOn asks Envoy to wait up to d for the answer to the current message
// (override_message_timeout; honoured once per message, must be <= the
// filter's max_message_timeout).
func holdOn(d time.Duration) *extprocv3.ProcessingResponse {
	return &extprocv3.ProcessingResponse{OverrideMessageTimeout: durationpb.New(d)}
}

// immediate builds a local reply. retryAfter > 0 adds Retry-After (whole
// seconds, at least 1).
func immediate(code typev3.StatusCode, outcome, body string, retryAfter time.Duration) *extprocv3.ProcessingResponse {
	ir := &extprocv3.ImmediateResponse{
		Status:  &typev3.HttpStatus{Code: code},
		Body:    []byte(body),
		Details: "thaw_activator_" + outcome,
		Headers: &extprocv3.HeaderMutation{SetHeaders: []*corev3.HeaderValueOption{{
			Header:       &corev3.HeaderValue{Key: "content-type", RawValue: []byte("text/plain; charset=utf-8")},
			AppendAction: corev3.HeaderValueOption_OVERWRITE_IF_EXISTS_OR_ADD,
		}}},
	}
	if retryAfter > 0 {
		secs := int64((retryAfter + time.Second - 1) / time.Second)
		ir.Headers.SetHeaders = append(ir.Headers.SetHeaders, &corev3.HeaderValueOption{
			Header:       &corev3.HeaderValue{Key: "retry-after", RawValue: []byte(strconv.FormatInt(secs, 10))},
			AppendAction: corev3.HeaderValueOption_OVERWRITE_IF_EXISTS_OR_ADD,
		})
	}
	return &extprocv3.ProcessingResponse{Response: &extprocv3.ProcessingResponse_ImmediateResponse{ImmediateResponse: ir}}
}

// closing adds "connection: close" to a local reply, so an HTTP/1.1
// client's connection (one of Envoy's file descriptors) is closed after
// the answer instead of kept alive: the answer to a request refused
// because Envoy is short of file descriptors.
func closing(r *extprocv3.ProcessingResponse) *extprocv3.ProcessingResponse {
	ir := r.GetImmediateResponse()
	ir.Headers.SetHeaders = append(ir.Headers.SetHeaders, &corev3.HeaderValueOption{
		Header:       &corev3.HeaderValue{Key: "connection", RawValue: []byte("close")},
		AppendAction: corev3.HeaderValueOption_OVERWRITE_IF_EXISTS_OR_ADD,
	})
	return r
}

// answers holds the fixed replies, built and validated once.
type answers struct {
	queueFull, heldLimit, holdTimeout, shuttingDown, unknownRevision, badRequest *extprocv3.ProcessingResponse
	asleep, holdOn                                                               *extprocv3.ProcessingResponse
}

func newAnswers(retryAfter, holdBudget time.Duration) (*answers, error) {
	a := &answers{
		holdOn:          holdOn(holdBudget),
		queueFull:       immediate(typev3.StatusCode_ServiceUnavailable, outcomeQueueFull, "revision is busy: too many requests waiting\n", retryAfter),
		heldLimit:       closing(immediate(typev3.StatusCode_ServiceUnavailable, outcomeHeldLimit, "too many requests waiting for cold revisions: Envoy's open-file limit is reached\n", retryAfter)),
		holdTimeout:     immediate(typev3.StatusCode_ServiceUnavailable, outcomeHoldTimeout, "revision did not become ready in time\n", retryAfter),
		shuttingDown:    immediate(typev3.StatusCode_ServiceUnavailable, outcomeShuttingDown, "activator is shutting down\n", retryAfter),
		unknownRevision: immediate(typev3.StatusCode_NotFound, outcomeUnknownRevision, "unknown revision\n", 0),
		badRequest:      immediate(typev3.StatusCode_BadRequest, outcomeBadRequest, "missing or invalid "+RevisionHeader+" header\n", 0),
		asleep:          immediate(typev3.StatusCode_ServiceUnavailable, outcomeWakeRule, "revision is asleep; this request does not wake it\n", retryAfter),
	}
	for _, r := range []*extprocv3.ProcessingResponse{a.queueFull, a.heldLimit, a.holdTimeout, a.shuttingDown, a.unknownRevision, a.badRequest, a.asleep, a.holdOn} {
		if err := r.ValidateAll(); err != nil {
			return nil, fmt.Errorf("extproc: invalid local reply: %w", err)
		}
	}
	return a, nil
}

// continueResponse answers a message the server does not act on (response
// headers or trailers when Envoy is configured to send them) so Envoy goes
// on at once.
func continueResponse(req *extprocv3.ProcessingRequest) *extprocv3.ProcessingResponse {
	switch req.Request.(type) {
	case *extprocv3.ProcessingRequest_ResponseHeaders:
		return &extprocv3.ProcessingResponse{Response: &extprocv3.ProcessingResponse_ResponseHeaders{ResponseHeaders: &extprocv3.HeadersResponse{}}}
	case *extprocv3.ProcessingRequest_ResponseTrailers:
		return &extprocv3.ProcessingResponse{Response: &extprocv3.ProcessingResponse_ResponseTrailers{ResponseTrailers: &extprocv3.TrailersResponse{}}}
	case *extprocv3.ProcessingRequest_RequestTrailers:
		return &extprocv3.ProcessingResponse{Response: &extprocv3.ProcessingResponse_RequestTrailers{RequestTrailers: &extprocv3.TrailersResponse{}}}
	case *extprocv3.ProcessingRequest_RequestBody:
		return &extprocv3.ProcessingResponse{Response: &extprocv3.ProcessingResponse_RequestBody{RequestBody: &extprocv3.BodyResponse{}}}
	case *extprocv3.ProcessingRequest_ResponseBody:
		return &extprocv3.ProcessingResponse{Response: &extprocv3.ProcessingResponse_ResponseBody{ResponseBody: &extprocv3.BodyResponse{}}}
	default:
		return nil
	}
}

// revisionHeader returns the first value of x-thaw-revision and how many
// values were sent (Envoy sends header names in lower case; values in
// raw_value, or value from older Envoys).
func revisionHeader(h *extprocv3.HttpHeaders) (string, int) {
	var first string
	n := 0
	for _, hv := range h.GetHeaders().GetHeaders() {
		if hv.GetKey() != RevisionHeader {
			continue
		}
		if n == 0 {
			if len(hv.GetRawValue()) > 0 {
				first = string(hv.GetRawValue())
			} else {
				first = hv.GetValue()
			}
		}
		n++
	}
	return first, n
}
