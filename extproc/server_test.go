package extproc

import (
	"context"
	"errors"
	"io"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	filterv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_proc/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/structpb"
)

// wantRouted is the answer the wire contract fixes for a chosen backend;
// short (container concurrency 0) switches the stream to ShortMode.
func wantRouted(addr string, short bool) *extprocv3.ProcessingResponse {
	md, err := structpb.NewStruct(map[string]any{"thaw.activator": map[string]any{"destination": addr}})
	if err != nil {
		panic(err)
	}
	r := &extprocv3.ProcessingResponse{
		Response: &extprocv3.ProcessingResponse_RequestHeaders{RequestHeaders: &extprocv3.HeadersResponse{
			Response: &extprocv3.CommonResponse{Status: extprocv3.CommonResponse_CONTINUE},
		}},
		DynamicMetadata: md,
	}
	if short {
		r.ModeOverride = &filterv3.ProcessingMode{
			RequestHeaderMode: filterv3.ProcessingMode_SEND, ResponseHeaderMode: filterv3.ProcessingMode_SKIP,
			RequestBodyMode: filterv3.ProcessingMode_NONE, ResponseBodyMode: filterv3.ProcessingMode_NONE,
			RequestTrailerMode: filterv3.ProcessingMode_SKIP, ResponseTrailerMode: filterv3.ProcessingMode_SKIP,
		}
	}
	return r
}

func wantLocal(code typev3.StatusCode, details, body, retryAfter string) *extprocv3.ProcessingResponse {
	set := []*corev3.HeaderValueOption{{
		Header:       &corev3.HeaderValue{Key: "content-type", RawValue: []byte("text/plain; charset=utf-8")},
		AppendAction: corev3.HeaderValueOption_OVERWRITE_IF_EXISTS_OR_ADD,
	}}
	if retryAfter != "" {
		set = append(set, &corev3.HeaderValueOption{
			Header:       &corev3.HeaderValue{Key: "retry-after", RawValue: []byte(retryAfter)},
			AppendAction: corev3.HeaderValueOption_OVERWRITE_IF_EXISTS_OR_ADD,
		})
	}
	return &extprocv3.ProcessingResponse{Response: &extprocv3.ProcessingResponse_ImmediateResponse{
		ImmediateResponse: &extprocv3.ImmediateResponse{
			Status:  &typev3.HttpStatus{Code: code},
			Headers: &extprocv3.HeaderMutation{SetHeaders: set},
			Body:    []byte(body),
			Details: details,
		}}}
}

// wantEnd checks that the server ends the stream cleanly once the client
// (Envoy) half-closes it.
func wantEnd(t *testing.T, st extprocv3.ExternalProcessor_ProcessClient) {
	t.Helper()
	if _, err := st.Recv(); !errors.Is(err, io.EOF) {
		t.Fatalf("after the answer: Recv = %v, want io.EOF (stream closed by the server with OK)", err)
	}
}

func TestRoutesToBackendAndReleasesAtStreamEnd(t *testing.T) {
	e := newEnv(t, 5*time.Second)
	e.revision(demo, 1, time.Minute, 10, "127.0.0.1")
	st, _ := e.open(headers("x-thaw-revision", "default/demo", "host", "demo.example.com"))
	resp := recv(t, st)
	if err := resp.ValidateAll(); err != nil {
		t.Fatalf("answer does not validate: %v", err)
	}
	wantProto(t, "answer", wantRouted("127.0.0.1:8080", false), resp)
	e.waitStats(demo, 0, 1)
	if err := st.CloseSend(); err != nil { // Envoy ends the stream: request over
		t.Fatal(err)
	}
	wantEnd(t, st)
	e.waitStats(demo, 0, 0)
	if got := counterValue(e.prom, "thaw_extproc_responses_total", "routed"); got != 1 {
		t.Errorf("responses_total{routed} = %v, want 1", got)
	}
}

// The slot is also released when Envoy resets the stream (client gone).
func TestReleasesOnStreamReset(t *testing.T) {
	e := newEnv(t, 5*time.Second)
	e.revision(demo, 1, time.Minute, 10, "127.0.0.1")
	st, cancel := e.open(headers("x-thaw-revision", "default/demo"))
	wantProto(t, "answer", wantRouted("127.0.0.1:8080", false), recv(t, st))
	e.waitStats(demo, 0, 1)
	cancel()
	e.waitStats(demo, 0, 0)
}

// Response trailers (the completion signal when the response has them) are
// answered at once so Envoy never waits on the server.
func TestAnswersResponseTrailers(t *testing.T) {
	e := newEnv(t, 5*time.Second)
	e.revision(demo, 1, time.Minute, 10, "127.0.0.1")
	st, _ := e.open(headers("x-thaw-revision", "default/demo"))
	recv(t, st)
	err := st.Send(&extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_ResponseTrailers{
		ResponseTrailers: &extprocv3.HttpTrailers{Trailers: &corev3.HeaderMap{}}}})
	if err != nil {
		t.Fatal(err)
	}
	wantProto(t, "trailers answer", &extprocv3.ProcessingResponse{Response: &extprocv3.ProcessingResponse_ResponseTrailers{
		ResponseTrailers: &extprocv3.TrailersResponse{}}}, recv(t, st))
	st.CloseSend()
	wantEnd(t, st)
	e.waitStats(demo, 0, 0)
}

func TestHoldsThenRoutes(t *testing.T) {
	e := newEnv(t, 7*time.Second)
	e.revision(demo, 0, time.Minute, 10)
	st, _ := e.open(headers("x-thaw-revision", "default/demo"))
	wantProto(t, "first message while held",
		&extprocv3.ProcessingResponse{OverrideMessageTimeout: durationpb.New(7 * time.Second)}, recv(t, st))
	e.waitStats(demo, 1, 0)
	e.setBackends(demo, "127.0.0.9")
	wantProto(t, "answer once a backend is ready", wantRouted("127.0.0.9:8080", true), recv(t, st))
	wantEnd(t, st)
}

// With container concurrency 0 the answer switches the stream to ShortMode
// and the server ends the stream right after it, without waiting for Envoy
// (one round trip); no slot stays reserved.
func TestUnlimitedStreamEndsWithTheAnswer(t *testing.T) {
	e := newEnv(t, 5*time.Second)
	e.revision(demo, 0, time.Minute, 10, "127.0.0.1", "127.0.0.2")
	for i := 0; i < 4; i++ {
		st, _ := e.open(headers("x-thaw-revision", "default/demo"))
		resp := recv(t, st)
		if err := resp.ValidateAll(); err != nil {
			t.Fatalf("answer does not validate: %v", err)
		}
		// Released at once, so picks rotate over the backends.
		want := []string{"127.0.0.1:8080", "127.0.0.2:8080"}
		if got := resp.GetDynamicMetadata().GetFields()["thaw.activator"].GetStructValue().GetFields()["destination"].GetStringValue(); got != want[0] && got != want[1] {
			t.Fatalf("destination %q, want one of %v", got, want)
		}
		if !proto.Equal(resp.GetModeOverride(), ShortMode()) {
			t.Fatalf("mode_override = %v, want ShortMode", resp.GetModeOverride())
		}
		wantEnd(t, st) // the server ended it: no CloseSend from the client
	}
	e.waitStats(demo, 0, 0)
	if got := counterValue(e.prom, "thaw_extproc_responses_total", "routed"); got != 4 {
		t.Errorf("responses_total{routed} = %v, want 4", got)
	}
}

func TestLocalReplies(t *testing.T) {
	e := newEnv(t, 5*time.Second)
	e.revision(demo, 0, time.Minute, 10)
	tests := []struct {
		name string
		req  *extprocv3.ProcessingRequest
		want *extprocv3.ProcessingResponse
	}{
		{"missing header", headers("host", "demo.example.com"),
			wantLocal(400, "thaw_activator_bad_request", "missing or invalid x-thaw-revision header\n", "")},
		{"invalid header", headers("x-thaw-revision", "demo"),
			wantLocal(400, "thaw_activator_bad_request", "missing or invalid x-thaw-revision header\n", "")},
		{"header twice", headers("x-thaw-revision", "default/demo", "x-thaw-revision", "default/other"),
			wantLocal(400, "thaw_activator_bad_request", "missing or invalid x-thaw-revision header\n", "")},
		{"unknown revision", headers("x-thaw-revision", "default/other"),
			wantLocal(404, "thaw_activator_unknown_revision", "unknown revision\n", "")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st, _ := e.open(tc.req)
			got := recv(t, st)
			if err := got.ValidateAll(); err != nil {
				t.Fatalf("answer does not validate: %v", err)
			}
			wantProto(t, "answer", tc.want, got)
			wantEnd(t, st)
		})
	}
}

func TestHoldTimeoutAnswers503(t *testing.T) {
	e := newEnv(t, 30*time.Second)
	e.revision(demo, 0, time.Second, 10) // hold timeout 1s (the minimum)
	st, _ := e.open(headers("x-thaw-revision", "default/demo"))
	recv(t, st) // override_message_timeout
	wantProto(t, "answer after the hold timeout",
		wantLocal(503, "thaw_activator_hold_timeout", "revision did not become ready in time\n", "1"), recv(t, st))
	wantEnd(t, st)
}

// A revision hold timeout above the budget is cut to the budget, answered
// a little before Envoy's own deadline.
func TestHoldBudgetCapsHold(t *testing.T) {
	e := newEnv(t, time.Second)
	e.revision(demo, 0, time.Minute, 10)
	st, _ := e.open(headers("x-thaw-revision", "default/demo"))
	wantProto(t, "first message", &extprocv3.ProcessingResponse{OverrideMessageTimeout: durationpb.New(time.Second)}, recv(t, st))
	wantProto(t, "answer at the budget",
		wantLocal(503, "thaw_activator_hold_timeout", "revision did not become ready in time\n", "1"), recv(t, st))
}

func TestQueueFullAnswers503(t *testing.T) {
	e := newEnv(t, 30*time.Second)
	e.revision(demo, 0, time.Minute, 1)
	held, _ := e.open(headers("x-thaw-revision", "default/demo"))
	recv(t, held)
	e.waitStats(demo, 1, 0)
	st, _ := e.open(headers("x-thaw-revision", "default/demo"))
	wantProto(t, "answer with a full queue",
		wantLocal(503, "thaw_activator_queue_full", "revision is busy: too many requests waiting\n", "1"), recv(t, st))
	wantEnd(t, st)
	if got := counterValue(e.prom, "thaw_extproc_responses_total", "queue_full"); got != 1 {
		t.Errorf("responses_total{queue_full} = %v, want 1", got)
	}
}

// TestHeldLimitAnswers503: past the activator's held-request bound (Envoy's
// open-file budget) the answer is 503 with Retry-After and
// "connection: close", so the client's connection, one of Envoy's files,
// is closed after it.
func TestHeldLimitAnswers503(t *testing.T) {
	e := newEnv(t, 30*time.Second)
	e.act.SetMaxHeld(1)
	e.revision(demo, 0, time.Minute, 10)
	held, _ := e.open(headers("x-thaw-revision", "default/demo"))
	recv(t, held)
	e.waitStats(demo, 1, 0)
	st, _ := e.open(headers("x-thaw-revision", "default/demo"))
	want := wantLocal(503, "thaw_activator_held_limit",
		"too many requests waiting for cold revisions: Envoy's open-file limit is reached\n", "1")
	h := want.GetImmediateResponse().Headers
	h.SetHeaders = append(h.SetHeaders, &corev3.HeaderValueOption{
		Header:       &corev3.HeaderValue{Key: "connection", RawValue: []byte("close")},
		AppendAction: corev3.HeaderValueOption_OVERWRITE_IF_EXISTS_OR_ADD,
	})
	wantProto(t, "answer past the held-request bound", want, recv(t, st))
	wantEnd(t, st)
	if got := counterValue(e.prom, "thaw_extproc_responses_total", "held_limit"); got != 1 {
		t.Errorf("responses_total{held_limit} = %v, want 1", got)
	}
}

func TestFirstMessageMustBeRequestHeaders(t *testing.T) {
	e := newEnv(t, 5*time.Second)
	st, _ := e.open(&extprocv3.ProcessingRequest{Request: &extprocv3.ProcessingRequest_ResponseHeaders{
		ResponseHeaders: &extprocv3.HttpHeaders{}}})
	_, err := st.Recv()
	if status.Code(err) != codes.InvalidArgument {
		t.Fatalf("Recv = %v, want InvalidArgument", err)
	}
}

// Drain: a held request is answered 503 at the drain deadline, a new one at
// once, and the stream of a request in flight is ended.
func TestDrain(t *testing.T) {
	e := newEnv(t, 30*time.Second)
	e.revision(demo, 1, time.Minute, 10, "127.0.0.1")
	inFlight, _ := e.open(headers("x-thaw-revision", "default/demo"))
	wantProto(t, "first request", wantRouted("127.0.0.1:8080", false), recv(t, inFlight))
	held, _ := e.open(headers("x-thaw-revision", "default/demo"))
	recv(t, held) // override_message_timeout
	e.waitStats(demo, 1, 1)

	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	drained := make(chan error, 1)
	go func() { drained <- e.srv.Drain(ctx) }()

	wantProto(t, "held request at the drain deadline",
		wantLocal(503, "thaw_activator_shutting_down", "activator is shutting down\n", "1"), recv(t, held))
	wantEnd(t, held)
	if _, err := inFlight.Recv(); !errors.Is(err, io.EOF) {
		t.Fatalf("in-flight stream after drain: Recv = %v, want io.EOF", err)
	}
	if err := <-drained; !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Drain = %v, want deadline exceeded (a request was held)", err)
	}
	st, _ := e.open(headers("x-thaw-revision", "default/demo"))
	wantProto(t, "new request after drain",
		wantLocal(503, "thaw_activator_shutting_down", "activator is shutting down\n", "1"), recv(t, st))
}

// Drain with a held request that gets a backend before the deadline: it is
// routed, and Drain returns nil.
func TestDrainLetsHeldFinish(t *testing.T) {
	e := newEnv(t, 30*time.Second)
	e.revision(demo, 0, time.Minute, 10)
	held, _ := e.open(headers("x-thaw-revision", "default/demo"))
	recv(t, held)
	e.waitStats(demo, 1, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	drained := make(chan error, 1)
	go func() { drained <- e.srv.Drain(ctx) }()
	e.setBackends(demo, "127.0.0.1")
	wantProto(t, "held request during drain", wantRouted("127.0.0.1:8080", true), recv(t, held))
	if err := <-drained; err != nil {
		t.Fatalf("Drain = %v, want nil", err)
	}
}

// The revision may come as gRPC metadata of the stream (Envoy's
// grpc_initial_metadata, set per route): it wins over a header, which a
// client could have sent when the route adds its own only after ext_proc.
func TestRevisionFromStreamMetadata(t *testing.T) {
	e := newEnv(t, 5*time.Second)
	e.revision(demo, 1, time.Minute, 10, "127.0.0.1")
	ctx, cancel := context.WithCancel(metadata.AppendToOutgoingContext(context.Background(), "x-thaw-revision", "default/demo"))
	defer cancel()
	st, err := e.client.Process(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Send(headers("x-thaw-revision", "default/other")); err != nil {
		t.Fatal(err)
	}
	wantProto(t, "answer", wantRouted("127.0.0.1:8080", false), recv(t, st))
	st.CloseSend()
	wantEnd(t, st)
}
