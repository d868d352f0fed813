package extproc

import (
	"context"
	"testing"
	"time"

	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"google.golang.org/protobuf/types/known/durationpb"
)

// TestHeaderTimeoutClosesSilentStreams: streams that never send their
// request headers are closed after the header timeout and counted; a real
// request for a known revision is routed meanwhile.
func TestHeaderTimeoutClosesSilentStreams(t *testing.T) {
	const silent = 300
	e := newEnvWith(t, 5*time.Second, Limits{HeaderTimeout: time.Second}, true)
	e.revision(demo, 1, time.Minute, 10, "127.0.0.1")
	ended := make(chan error, silent)
	for range silent {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		t.Cleanup(cancel)
		st, err := e.client.Process(ctx)
		if err != nil {
			t.Fatal(err)
		}
		go func() { _, err := st.Recv(); ended <- err }()
	}
	st, _ := e.open(headers("x-thaw-revision", "default/demo"))
	wantProto(t, "real request among silent streams", wantRouted("127.0.0.1:8080", false), recv(t, st))

	for range silent {
		if err := <-ended; err == nil {
			t.Fatal("a silent stream got a message")
		}
	}
	// The client sees a stream end before the handler counts it: wait
	// (bounded) for the count.
	got := testutil.ToFloat64(e.srv.limitMetrics.headerTimeout)
	for i := 0; i < 500 && got < silent; i++ {
		time.Sleep(10 * time.Millisecond)
		got = testutil.ToFloat64(e.srv.limitMetrics.headerTimeout)
	}
	if got != silent {
		t.Errorf("thaw_extproc_streams_closed_total{reason=header_timeout} = %v, want %d", got, silent)
	}
	// The routed request outlived the header timeout: its deadline was
	// stopped when its headers arrived.
	if err := st.CloseSend(); err != nil {
		t.Fatal(err)
	}
	wantEnd(t, st)
}

// TestMaxRequestDurationFreesSlot: a stream that sends headers, is routed
// and then never ends (no real request behind it) keeps the only slot of a
// container-concurrency-1 revision only for MaxRequestDuration; the held
// real request is then routed.
func TestMaxRequestDurationFreesSlot(t *testing.T) {
	e := newEnvWith(t, 20*time.Second, Limits{MaxRequestDuration: 300 * time.Millisecond}, false)
	e.revision(demo, 1, time.Minute, 10, "127.0.0.1")
	squatter, _ := e.open(headers("x-thaw-revision", "default/demo"))
	wantProto(t, "squatter", wantRouted("127.0.0.1:8080", false), recv(t, squatter))

	real, _ := e.open(headers("x-thaw-revision", "default/demo"))
	wantProto(t, "real request held first",
		&extprocv3.ProcessingResponse{OverrideMessageTimeout: durationpb.New(20 * time.Second)}, recv(t, real))
	wantProto(t, "real request routed once the squatter's slot expired", wantRouted("127.0.0.1:8080", false), recv(t, real))
	wantEnd(t, squatter) // closed by the server, the answered request goes on in Envoy
	if got := testutil.ToFloat64(e.srv.limitMetrics.maxDuration); got < 1 {
		t.Errorf("thaw_extproc_streams_closed_total{reason=max_duration} = %v, want >= 1", got)
	}
}
