package extproc

import (
	"context"
	"io"
	"testing"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"

	"github.com/thaw-dev/thaw/revision"
)

// fuzzStream is an in-process ExternalProcessor stream: Recv yields req
// once and then io.EOF (Envoy ends the request); Send records responses.
type fuzzStream struct {
	grpc.ServerStream
	ctx  context.Context
	req  *extprocv3.ProcessingRequest
	sent []*extprocv3.ProcessingResponse
}

func (s *fuzzStream) Context() context.Context { return s.ctx }

func (s *fuzzStream) Recv() (*extprocv3.ProcessingRequest, error) {
	if s.req == nil {
		return nil, io.EOF
	}
	r := s.req
	s.req = nil
	return r, nil
}

func (s *fuzzStream) Send(r *extprocv3.ProcessingResponse) error {
	s.sent = append(s.sent, r)
	return nil
}

func (s *fuzzStream) SetHeader(metadata.MD) error  { return nil }
func (s *fuzzStream) SendHeader(metadata.MD) error { return nil }
func (s *fuzzStream) SetTrailer(metadata.MD)       {}

var _ extprocv3.ExternalProcessor_ProcessServer = (*fuzzStream)(nil)

func headersWire(f *testing.F, kv ...string) []byte {
	f.Helper()
	h := &extprocv3.HttpHeaders{Headers: &corev3.HeaderMap{}}
	for i := 0; i+1 < len(kv); i += 2 {
		h.Headers.Headers = append(h.Headers.Headers, &corev3.HeaderValue{Key: kv[i], RawValue: []byte(kv[i+1])})
	}
	b, err := proto.Marshal(h)
	if err != nil {
		f.Fatal(err)
	}
	return b
}

// FuzzRequestHeaders feeds arbitrary request_headers messages (wire bytes
// of HttpHeaders, as Envoy would send them) through the server's request
// handling, in process, against a real activator that knows one revision
// (default/demo) with a free backend. Whatever the headers, the server
// answers exactly once before the stream ends: the backend when exactly one
// x-thaw-revision header names default/demo, else an ImmediateResponse
// (400 for a missing, repeated or malformed header, 404 for any other
// revision). `go test` runs only the seeds.
func FuzzRequestHeaders(f *testing.F) {
	e := newEnv(f, 5*time.Second)
	e.revision(demo, 0, time.Second, 10, "127.0.0.7")
	f.Add(headersWire(f, RevisionHeader, "default/demo"))
	f.Add(headersWire(f, ":authority", "demo.example.com", RevisionHeader, "default/demo"))
	f.Add(headersWire(f, RevisionHeader, "default/demo", RevisionHeader, "default/demo"))
	f.Add(headersWire(f, RevisionHeader, "default/other"))
	f.Add(headersWire(f, RevisionHeader, "default/demo/x"))
	f.Add(headersWire(f, RevisionHeader, "/demo"))
	f.Add(headersWire(f, RevisionHeader, ""))
	f.Add(headersWire(f, "X-Thaw-Revision", "default/demo"))
	f.Add(headersWire(f, RevisionHeader, "default/\xffdemo"))
	f.Add([]byte{})
	f.Add([]byte{0x0a, 0xff})
	f.Fuzz(func(t *testing.T, wire []byte) {
		var h extprocv3.HttpHeaders
		if err := proto.Unmarshal(wire, &h); err != nil {
			return // gRPC refuses a malformed message before the server sees it
		}
		first, count := revisionHeader(&h)
		n := 0
		for _, hv := range h.GetHeaders().GetHeaders() {
			if hv.GetKey() == RevisionHeader {
				n++
			}
		}
		if count != n {
			t.Fatalf("revisionHeader counted %d values for %d %s headers", count, n, RevisionHeader)
		}
		var key revision.Key
		var keyErr error = io.EOF
		if count == 1 {
			if key, keyErr = revision.ParseKey(first); keyErr == nil && key.String() != first {
				t.Fatalf("ParseKey(%q) = %v, which prints differently", first, key)
			}
		}

		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		s := &fuzzStream{ctx: ctx, req: &extprocv3.ProcessingRequest{
			Request: &extprocv3.ProcessingRequest_RequestHeaders{RequestHeaders: &h}}}
		if err := e.srv.Process(s); err != nil {
			t.Fatalf("Process: %v", err)
		}
		if len(s.sent) != 1 {
			t.Fatalf("sent %d responses, want 1: %v", len(s.sent), s.sent)
		}
		imm := s.sent[0].GetImmediateResponse()
		switch {
		case keyErr == nil && key == demo:
			if imm != nil || s.sent[0].GetRequestHeaders() == nil {
				t.Fatalf("default/demo not routed: %v", s.sent[0])
			}
		case keyErr == nil:
			if imm.GetStatus().GetCode() != typev3.StatusCode_NotFound {
				t.Fatalf("revision %v: answer %v, want 404", key, s.sent[0])
			}
		default:
			if imm.GetStatus().GetCode() != typev3.StatusCode_BadRequest {
				t.Fatalf("header value %q (%d copies): answer %v, want 400", first, count, s.sent[0])
			}
		}
		if h, f := e.act.Stats(demo); h != 0 || f != 0 {
			t.Fatalf("after the stream: %d held, %d in flight; want none", h, f)
		}
	})
}
