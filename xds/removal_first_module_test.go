package xds

import (
	"bufio"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/zap/zaptest"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/thaw-dev/thaw/modsvc"
	"github.com/thaw-dev/thaw/module/state"
	"github.com/thaw-dev/thaw/revision"
)

// watchedModules is the real modsvc.Server's ModuleStates, counting the
// checks that found a module lagging (so a test knows Run looked).
type watchedModules struct {
	ModuleStates
	lagged atomic.Int64
}

func (m *watchedModules) LaggingModules(version uint64, limit int) []string {
	out := m.ModuleStates.LaggingModules(version, limit)
	if len(out) > 0 {
		m.lagged.Add(1)
	}
	return out
}

// moduleStream is a state stream as the activator module opens it
// (numbered: state.SeqParam), read by the test.
type moduleStream struct {
	t     *testing.T
	sc    *bufio.Scanner
	close func()
	url   string
}

func openModuleStream(t *testing.T, url, node string) *moduleStream {
	t.Helper()
	resp, err := http.Get(url + modsvc.StatePath + "?node=" + node + "&" + state.SeqParam + "=1")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, state.MaxMessageBytes)
	return &moduleStream{t: t, sc: sc, close: func() { resp.Body.Close() }, url: url}
}

// next reads the next update and returns it with the hosts it lists.
func (m *moduleStream) next() (*state.Update, []string) {
	m.t.Helper()
	if !m.sc.Scan() {
		m.t.Fatalf("state stream ended: %v", m.sc.Err())
	}
	u, err := state.DecodeUpdate(m.sc.Bytes())
	if err != nil {
		m.t.Fatal(err)
	}
	var hosts []string
	for _, r := range u.Revisions {
		for _, b := range r.Backends {
			hosts = append(hosts, b.Addr)
		}
	}
	slices.Sort(hosts)
	return u, hosts
}

// echo reports that the module applied u.
func (m *moduleStream) echo(node string, u *state.Update) {
	m.t.Helper()
	r, err := http.Post(m.url+modsvc.ReportPath, "application/json",
		strings.NewReader(fmt.Sprintf(`{"node":%q,"applied":%d}`, node, u.Seq)))
	if err != nil {
		m.t.Fatal(err)
	}
	r.Body.Close()
	if r.StatusCode != http.StatusNoContent {
		m.t.Fatalf("report answered %d", r.StatusCode)
	}
}

// TestRemovalFirstWaitsForModules: with the activator module, Envoy's
// ACK of the removal is not enough: the module's state stream is separate,
// and a module still holding {A, B} while its Envoy has {A, C} pins B.
// The additions wait until every connected module applied the removal
// (its report echoes the numbered update), or until its stream ends (a
// module that is gone holds nothing back), or StageTimeout
// (module_timeout). Real modsvc.Server, in-process Envoy client.
func TestRemovalFirstWaitsForModules(t *testing.T) {
	for _, tc := range []struct {
		name    string
		act     string // "echo", "vanish" or "" (StageTimeout)
		outcome string
	}{
		{"module applies the removal", "echo", "acked"},
		{"module's stream ends", "vanish", "acked"},
		{"module never confirms", "", "module_timeout"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := componentConfig()
			cfg.RemovalFirst = true
			if tc.act == "" {
				cfg.StageTimeout = 300 * time.Millisecond
			}
			f := startFixture(t, cfg)
			svc := &modsvc.Server{Registry: f.reg, Confirmer: f.srv, FirstUpdateWait: -1}
			mods := &watchedModules{ModuleStates: svc}
			f.srv.SetModuleStates(mods)
			hs := httptest.NewServer(svc)
			t.Cleanup(hs.Close)

			a, b, c := ready("10.0.0.1", 80), ready("10.0.0.2", 80), ready("10.0.0.3", 80)
			f.upsert(keyA, revision.ModeServe, []string{"a.example.com"}, a, b)
			f.reg.SetSynced()
			env := dialDelta(t, f.addr, "envoy-1")
			syncAll(t, env)
			ctx := t.Context()
			if err := f.srv.WaitConfirmed(ctx, keyA, generation(f, keyA)); err != nil {
				t.Fatal(err)
			}
			mod := openModuleStream(t, hs.URL, "envoy-1")
			u, hosts := mod.next()
			if !slices.Equal(hosts, []string{"10.0.0.1:80", "10.0.0.2:80"}) || u.Seq == 0 {
				t.Fatalf("module's first update: %v seq %d", hosts, u.Seq)
			}
			mod.echo("envoy-1", u)

			f.reg.SetBackends(keyA, []revision.Backend{a, c})
			gen := generation(f, keyA)
			h, ack := recvHosts(t, env)
			if !slices.Equal(h, []string{"10.0.0.1:80"}) {
				t.Fatalf("Envoy got %v first, want the removal alone", h)
			}
			removal, hosts := mod.next() // the module's copy of the removal, not yet applied
			if !slices.Equal(hosts, []string{"10.0.0.1:80"}) {
				t.Fatalf("module got %v, want [10.0.0.1:80]", hosts)
			}
			ack()
			if tc.act != "" {
				// Run saw the ACK and found the module lagging: the
				// additions are held back.
				waitFor(t, "a split check that finds the module lagging", func() bool { return mods.lagged.Load() > 0 })
				name := revision.ClusterName(keyA)
				held, _ := f.srv.deltas[resourcev3.EndpointType].HeldOf([]string{name})[name].(*endpointv3.ClusterLoadAssignment)
				if got := hostList(held); !slices.Equal(got, []string{"10.0.0.1:80"}) {
					t.Fatalf("Envoy's assignment while the module lags: %v, want the removal alone", got)
				}
				if f.srv.ConfirmedBy("envoy-1", keyA, gen) {
					t.Fatal("generation confirmed before the additions")
				}
				switch tc.act {
				case "echo":
					mod.echo("envoy-1", removal)
				case "vanish":
					mod.close()
				}
			}
			h, ack = recvHosts(t, env)
			if !slices.Equal(h, []string{"10.0.0.1:80", "10.0.0.3:80"}) {
				t.Fatalf("Envoy got %v second, want [10.0.0.1:80 10.0.0.3:80]", h)
			}
			ack()
			if err := f.srv.WaitConfirmed(ctx, keyA, gen); err != nil {
				t.Fatal(err)
			}
			for _, o := range []string{"acked", "module_timeout", "timeout"} {
				want := 0.0
				if o == tc.outcome {
					want = 1
				}
				if got := testutil.ToFloat64(f.srv.metrics.removalFirst.WithLabelValues(o)); got != want {
					t.Errorf("thaw_xds_removal_first_total{outcome=%q} = %v, want %v", o, got, want)
				}
			}
			if n := testutil.CollectAndCount(f.srv.metrics.removalFirstSeconds); n != 1 {
				t.Errorf("thaw_xds_removal_first_seconds: %d series", n)
			}
		})
	}
}

// TestRemovalFirstFullApply: a registry change that needs a full apply
// (here a host renamed) and swaps a backend in the same snapshot sends
// the removal first too, and the additions after the ACK.
func TestRemovalFirstFullApply(t *testing.T) {
	cfg := componentConfig()
	cfg.RemovalFirst = true
	clk := clocktesting.NewFakeClock(time.Now())
	reg := revision.NewRegistry(revision.RegistryOptions{Holdoff: time.Second, Clock: clk})
	f := startFixtureOn(t, ServerOptions{Logger: zaptest.NewLogger(t), Config: cfg}, reg)
	publish := func(change func()) {
		t.Helper()
		v := reg.Snapshot().Version
		change()
		waitFor(t, "the registry's holdoff timer", clk.HasWaiters)
		clk.Step(time.Second)
		waitFor(t, "the registry's publication", func() bool { return reg.Snapshot().Version > v })
	}
	a, b, c := ready("10.0.0.1", 80), ready("10.0.0.2", 80), ready("10.0.0.3", 80)
	publish(func() {
		f.upsert(keyA, revision.ModeServe, []string{"a.example.com"}, a, b)
		f.reg.SetSynced()
	})
	env := dialDelta(t, f.addr, "envoy-1")
	syncAll(t, env)
	if err := f.srv.WaitConfirmed(t.Context(), keyA, generation(f, keyA)); err != nil {
		t.Fatal(err)
	}
	v := f.reg.Snapshot().Version
	publish(func() {
		spec := f.reg.Snapshot().Get(keyA).Spec
		spec.Hosts = []string{"a2.example.com"} // routing: a full apply
		f.reg.SetBackends(keyA, []revision.Backend{a, c})
		f.reg.Upsert(keyA, spec)
	})
	if got := f.reg.Snapshot().Version; got != v+1 {
		t.Fatalf("snapshot %d after %d: the change was not published as one", got, v)
	}
	var first []string
	for first == nil {
		r := env.recv()
		env.ack(r)
		if r.GetTypeUrl() == resourcev3.EndpointType {
			first = hostList(cla(t, r.GetResources()[0]))
		}
	}
	if !slices.Equal(first, []string{"10.0.0.1:80"}) {
		t.Fatalf("full apply sent %v first, want the removal alone", first)
	}
	for {
		r := env.recv()
		env.ack(r)
		if r.GetTypeUrl() == resourcev3.EndpointType {
			if h := hostList(cla(t, r.GetResources()[0])); !slices.Equal(h, []string{"10.0.0.1:80", "10.0.0.3:80"}) {
				t.Fatalf("then %v, want [10.0.0.1:80 10.0.0.3:80]", h)
			}
			break
		}
	}
	if err := f.srv.WaitConfirmed(t.Context(), keyA, generation(f, keyA)); err != nil {
		t.Fatal(err)
	}
	if got := testutil.ToFloat64(f.srv.metrics.removalFirst.WithLabelValues("split")); got != 1 {
		t.Errorf("thaw_xds_removal_first_total{outcome=\"split\"} = %v, want 1", got)
	}
}
