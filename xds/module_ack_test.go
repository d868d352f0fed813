package xds

import (
	"context"
	"testing"

	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"

	"github.com/thaw-dev/thaw/revision"
)

// TestConfirmedByNode: ConfirmedBy answers per node: a backend's
// endpoints ACKed by one Envoy are confirmed for it, not for another
// Envoy that has not ACKed them yet, nor for an unknown node.
func TestConfirmedByNode(t *testing.T) {
	f := startFixture(t, componentConfig())
	f.upsert(keyA, revision.ModeServe, []string{"a.example.com"})
	f.reg.SetSynced()
	c1, c2 := dialSyncedPair(t, f.addr)
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	if err := f.srv.WaitConfirmed(ctx, keyA, generation(f, keyA)); err != nil {
		t.Fatal(err)
	}
	f.reg.SetBackends(keyA, []revision.Backend{ready("10.0.0.1", 80)})
	gen := generation(f, keyA)
	u1, u2 := c1.recvType(resourcev3.EndpointType), c2.recvType(resourcev3.EndpointType)
	if f.srv.ConfirmedBy("envoy-1", keyA, gen) {
		t.Fatal("confirmed for envoy-1 before its ACK")
	}
	c1.ack(u1)
	waitFor(t, "envoy-1 confirmed", func() bool { return f.srv.ConfirmedBy("envoy-1", keyA, gen) })
	if f.srv.ConfirmedBy("envoy-2", keyA, gen) {
		t.Fatal("confirmed for envoy-2, which has not ACKed")
	}
	if f.srv.ConfirmedBy("envoy-3", keyA, gen) {
		t.Fatal("confirmed for a node with no stream")
	}
	ch := f.srv.Changed()
	c2.ack(u2)
	select {
	case <-ch:
	case <-ctx.Done():
		t.Fatal("Changed not closed by an ACK")
	}
	waitFor(t, "envoy-2 confirmed", func() bool { return f.srv.ConfirmedBy("envoy-2", keyA, gen) })
	if f.srv.ConfirmedBy("envoy-1", keyA, gen+1) {
		t.Fatal("confirmed for a generation not applied yet")
	}
}
