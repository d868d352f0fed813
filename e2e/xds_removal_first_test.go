//go:build e2e

package e2e

import (
	"strings"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/thaw-dev/thaw/revision"
)

// TestXDSEnvoyRemovalFirst: a real Envoy takes a revision's backend swap
// in two steps (removal first, docs/activator.md *Removal ordering*):
// one backend replaced by another, then every backend replaced (the
// removal alone is an assignment without hosts). Each swap is confirmed
// (the additions followed the ACKed removal), Envoy rejected nothing, and
// the revision serves from the new backend.
func TestXDSEnvoyRemovalFirst(t *testing.T) {
	b1, b2, b3, b4 := startBackend(t, "b1"), startBackend(t, "b2"), startBackend(t, "b3"), startBackend(t, "b4")
	key := revision.Key{Namespace: "e2e", Name: "swap"}
	env := startXDSEnv(t, xdsEnvOptions{logger: zaptest.NewLogger(t, zaptest.Level(zap.InfoLevel)), removalFirst: true,
		setup: func(reg *revision.Registry) {
			spec := revision.DefaultSpec()
			spec.Hosts = []string{"swap.test"}
			reg.SetBackends(key, []revision.Backend{b1.addr(), b2.addr()})
			reg.SetMode(key, revision.ModeServe)
			reg.Upsert(key, spec)
		}})
	env.waitServed(t, "swap.test", "backend=b")

	env.reg.SetBackends(key, []revision.Backend{b1.addr(), b3.addr()})
	env.confirm(t, key)
	b2before := b2.hits.Load()
	seen := map[string]bool{}
	for i := 0; i < 40 && !(seen["b1"] && seen["b3"]); i++ {
		code, body := env.get(t, "swap.test", nil)
		if code != 200 {
			t.Fatalf("after swapping b2 for b3: %d %q", code, body)
		}
		seen[strings.TrimPrefix(strings.Fields(body)[0], "backend=")] = true
	}
	if !seen["b3"] || b2.hits.Load() != b2before {
		t.Fatalf("after swapping b2 for b3: served by %v, b2 hits %d -> %d; want b3 serving, b2 none",
			seen, b2before, b2.hits.Load())
	}

	env.reg.SetBackends(key, []revision.Backend{b4.addr()})
	env.confirm(t, key)
	env.waitServed(t, "swap.test", "backend=b4")
	env.noNACKs(t)
}
