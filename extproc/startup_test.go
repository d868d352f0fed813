package extproc

import (
	"testing"
	"time"

	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	"google.golang.org/protobuf/types/known/durationpb"
)

// A request that arrives before the first synced snapshot is held like any
// other: its first message is override_message_timeout, so Envoy's short
// message timeout does not turn the wait into a 504.
func TestHeldBeforeFirstSync(t *testing.T) {
	e := newEnv(t, 7*time.Second)
	st, _ := e.open(headers("x-thaw-revision", "default/demo"))
	wantProto(t, "first message before sync",
		&extprocv3.ProcessingResponse{OverrideMessageTimeout: durationpb.New(7 * time.Second)}, recv(t, st))
	e.revision(demo, 0, time.Minute, 10, "127.0.0.9") // also marks the registry synced
	wantProto(t, "answer once synced", wantRouted("127.0.0.9:8080", true), recv(t, st))
	st.CloseSend()
	wantEnd(t, st)
}
