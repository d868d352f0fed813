package xds

import (
	"slices"
	"testing"

	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"

	"github.com/thaw-dev/thaw/revision"
	"github.com/thaw-dev/thaw/xds/translate"
)

// TestServerFlipsWhileAStageWaits: one Envoy stops answering while a
// revision is added, so the make-before-break stage waits for it (up to
// StageTimeout, 40 s here). Flips of other revisions must not queue behind
// that stage: the answering Envoy gets them while the stage still waits,
// also when the same publication removes a revision (that part waits).
// When the stopped Envoy ACKs, the stage ends and the routes follow.
// Ordering only, no timings.
func TestServerFlipsWhileAStageWaits(t *testing.T) {
	f := startFixture(t, componentConfig())
	f.upsert(keyA, revision.ModeServe, []string{"a.example.com"}, ready("10.0.0.1", 80))
	f.upsert(keyB, revision.ModeServe, []string{"b.example.com"}, ready("10.0.0.2", 80))
	f.reg.SetSynced()
	good := dialDelta(t, f.addr, "envoy-good")
	syncAll(t, good)
	stalled := dialDelta(t, f.addr, "envoy-stalled")
	syncAll(t, stalled)

	// From here the stalled Envoy reads and ACKs nothing.
	f.upsert(keyC, revision.ModeServe, []string{"c.example.com"}, ready("10.0.0.3", 80))
	good.ack(good.recvType(resourcev3.ClusterType))
	good.subscribe(resourcev3.EndpointType, "rev_default_c")
	good.ack(good.recvType(resourcev3.EndpointType))
	clusters := len(messages(f.srv.deltas[resourcev3.ClusterType]))

	f.reg.SetMode(keyA, revision.ModeProxy)
	flip := good.recvType(resourcev3.EndpointType)
	if names := resourceNames(flip); !slices.Equal(names, []string{"rev_default_a"}) || !isProxy(cla(t, flip.GetResources()[0])) {
		t.Fatalf("flip sent %v, want rev_default_a in proxy mode", names)
	}
	if routeHasHost(t, f, "c.example.com") {
		t.Fatal("the stage ended before the flip was sent: the flip queued behind it")
	}
	good.ack(flip)

	// A removal, then a flip, while the stage still waits: the flip goes
	// out, the removal waits for the stage.
	f.reg.Delete(keyB)
	f.reg.SetMode(keyA, revision.ModeServe)
	flip = good.recvType(resourcev3.EndpointType)
	if names := resourceNames(flip); !slices.Equal(names, []string{"rev_default_a"}) || isProxy(cla(t, flip.GetResources()[0])) {
		t.Fatalf("second flip sent %v, want rev_default_a in serve mode", names)
	}
	good.ack(flip)
	if routeHasHost(t, f, "c.example.com") || !routeHasHost(t, f, "b.example.com") ||
		len(messages(f.srv.deltas[resourcev3.ClusterType])) != clusters {
		t.Fatal("the staged apply or the removal went on before the stopped Envoy answered")
	}

	// The stopped Envoy answers: it ACKs the new cluster and its endpoints,
	// and the stage ends.
	stalled.ack(stalled.recvType(resourcev3.ClusterType))
	stalled.subscribe(resourcev3.EndpointType, "rev_default_c")
	for range 4 { // the two flips of a and c's endpoints, in some order
		r := stalled.recvType(resourcev3.EndpointType)
		stalled.ack(r)
		if slices.Contains(resourceNames(r), "rev_default_c") {
			break
		}
	}
	waitFor(t, "c's virtual host after the stage", func() bool { return routeHasHost(t, f, "c.example.com") })
	vh := good.recvType(resourcev3.VirtualHostType)
	if names := resourceNames(vh); !slices.Contains(names, translate.VirtualHostName("rev_default_c")) {
		t.Fatalf("VHDS after the stage = %v, want c's virtual host", names)
	}
}
