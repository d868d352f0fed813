//go:build e2e

package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/thaw-dev/thaw/revision"
)

// TestXDSEnvoyVirtualHostsOverVHDS: with every virtual host a VHDS resource
// of its own, Envoy still matches a wildcard host, prefers an exact host
// over it, answers 404 for unclaimed hosts, and keeps serving a host that
// moves from a revision's own virtual host into a split's (one VHDS
// response adds the split's and removes the revision's) with no NACK.
func TestXDSEnvoyVirtualHostsOverVHDS(t *testing.T) {
	wild := startBackend(t, "wild")
	exact := startBackend(t, "exact")
	v1 := startBackend(t, "v1")
	v2 := startBackend(t, "v2")
	keyWild := revision.Key{Namespace: "e2e", Name: "wild"}
	keyExact := revision.Key{Namespace: "e2e", Name: "exact"}
	keyV1 := revision.Key{Namespace: "e2e", Name: "v1"}
	keyV2 := revision.Key{Namespace: "e2e", Name: "v2"}
	upsert := func(reg *revision.Registry, key revision.Key, b *backend, percent *int32, hosts ...string) {
		spec := revision.DefaultSpec()
		spec.Hosts, spec.TrafficPercent = hosts, percent
		reg.SetBackends(key, []revision.Backend{b.addr()})
		reg.SetMode(key, revision.ModeServe)
		reg.Upsert(key, spec)
	}
	env := startXDSEnv(t, xdsEnvOptions{logger: zaptest.NewLogger(t, zaptest.Level(zap.InfoLevel)),
		setup: func(reg *revision.Registry) {
			upsert(reg, keyWild, wild, nil, "*.wild.test")
			upsert(reg, keyExact, exact, nil, "exact.wild.test")
			upsert(reg, keyV1, v1, nil, "shop.test")
		}})
	env.waitServed(t, "any.wild.test", "backend=wild")
	env.waitServed(t, "EXACT.wild.test", "backend=exact")
	env.waitServed(t, "shop.test", "backend=v1")
	if code, _ := env.get(t, "wild.test", nil); code != 404 {
		t.Fatalf("wild.test (not under *.wild.test): %d, want 404", code)
	}

	// shop.test becomes a split host: v1 keeps 100%, v2 joins at 0%.
	hundred, zero := int32(100), int32(0)
	upsert(env.reg, keyV2, v2, &zero, "shop.test")
	upsert(env.reg, keyV1, v1, &hundred, "shop.test")
	env.confirm(t, keyV2)
	env.confirm(t, keyV1)
	// Envoy's route table has the split's virtual host instead of v1's.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var dump string
	if !pollUntil(ctx, 30*time.Second, 50*time.Millisecond, func() bool {
		out, _, err := env.envoy.Admin(ctx, "/config_dump?resource=dynamic_route_configs")
		dump = out
		return err == nil && strings.Contains(out, `"thaw_http/split_shop.test"`) && !strings.Contains(out, `"thaw_http/rev_e2e_v1"`)
	}) {
		t.Fatalf("Envoy's routes never switched to the split's virtual host:\n%s", dump)
	}
	for range 20 {
		if code, body := env.get(t, "shop.test", nil); code != 200 || body != "backend=v1 revision=e2e/v1" {
			t.Fatalf("shop.test after the split: %d %q, want v1's answer", code, body)
		}
	}
	env.noNACKs(t)
}
