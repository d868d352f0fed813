//go:build e2e

package e2e

import (
	"fmt"
	"io"
	"math"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/thaw-dev/thaw/revision"
)

// TestXDSEnvoyModuleRemovalFirst: real Envoy with the real activator
// module (bin/thaw-activator.so), fed by a modsvc.Server: under a steady
// load, one backend is swapped for another three times. Each swap goes
// removal first, and its additions wait for Envoy's ACK and for the
// module's echo of the numbered state update carrying the removal
// (state.Report.Applied): every split ends "acked", none by StageTimeout
// (a module that did not echo would end module_timeout), and no request
// fails (the module never pins a host its Envoy dropped). The mean time
// from removal to additions is logged.
func TestXDSEnvoyModuleRemovalFirst(t *testing.T) {
	bs := []*backend{startBackend(t, "b1"), startBackend(t, "b2"), startBackend(t, "b3"), startBackend(t, "b4"), startBackend(t, "b5")}
	key := revision.Key{Namespace: "e2e", Name: "modswap"}
	env := startXDSEnv(t, xdsEnvOptions{logger: zaptest.NewLogger(t, zaptest.Level(zap.InfoLevel)), module: true,
		setup: func(reg *revision.Registry) {
			spec := revision.DefaultSpec()
			spec.Hosts = []string{"modswap.test"}
			spec.ContainerConcurrency = 4 // the module pins each request to a backend
			reg.SetBackends(key, []revision.Backend{bs[0].addr(), bs[1].addr()})
			reg.SetMode(key, revision.ModeServe)
			reg.Upsert(key, spec)
		}})
	env.confirm(t, key)
	env.waitServed(t, "modswap.test", "backend=b")
	// The module asked for numbered updates (its stream lags any future
	// snapshot) and echoed the current one.
	numbered := func() bool {
		lag := env.modsvc.LaggingModules(math.MaxUint64, 0)
		return len(lag) == 1 && lag[0] == xdsEnvNode && len(env.modsvc.LaggingModules(env.reg.Snapshot().Version, 0)) == 0
	}
	for i := 0; i < 200 && !numbered(); i++ {
		time.Sleep(50 * time.Millisecond)
	}
	if !numbered() {
		t.Fatalf("the module has no numbered state stream, or never echoed: lagging %v / %v",
			env.modsvc.LaggingModules(math.MaxUint64, 0), env.modsvc.LaggingModules(env.reg.Snapshot().Version, 0))
	}

	var sent, failed atomic.Int64
	var failMu sync.Mutex
	var fails []string // the first few, for the failure message
	swap := atomic.Int32{}
	fail := func(what string) {
		failed.Add(1)
		failMu.Lock()
		if len(fails) < 5 {
			fails = append(fails, fmt.Sprintf("during swap %d: %s", swap.Load(), what))
		}
		failMu.Unlock()
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := 0; w < 2; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 100000; i++ {
				select {
				case <-stop:
					return
				default:
				}
				req, _ := http.NewRequest(http.MethodGet, fmt.Sprintf("http://127.0.0.1:%d/", env.httpPort), nil)
				req.Host = "modswap.test"
				sent.Add(1)
				resp, err := httpClient.Do(req)
				if err != nil {
					fail(err.Error())
					continue
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					fail(fmt.Sprintf("%d %q %v", resp.StatusCode, body, resp.Header))
				}
			}
		}()
	}
	// keep: the two backends listed; each swap replaces the older one.
	keep := []*backend{bs[0], bs[1]}
	for i, next := range bs[2:] {
		keep = []*backend{keep[1], next}
		swap.Store(int32(i + 1))
		env.reg.SetBackends(key, []revision.Backend{keep[0].addr(), keep[1].addr()})
		env.confirm(t, key)
		before := next.hits.Load()
		deadline := time.Now().Add(20 * time.Second)
		for next.hits.Load() == before && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		if next.hits.Load() == before {
			t.Fatalf("swap %d: %s never served", i+1, next.name)
		}
	}
	close(stop)
	wg.Wait()
	if n := failed.Load(); n != 0 {
		failMu.Lock()
		defer failMu.Unlock()
		t.Fatalf("%d of %d requests failed across the swaps; first ones: %v (removal first: %v)", n, sent.Load(), fails,
			func() map[string]float64 { o, _, _ := removalFirstFigures(t, env); return o }())
	}
	outcomes, sum, count := removalFirstFigures(t, env)
	t.Logf("removal first with the module: outcomes %v; removal to additions mean %.2f ms over %d swaps; %d requests, 0 failed",
		outcomes, 1000*sum/float64(max(count, 1)), count, sent.Load())
	if outcomes["acked"] != 3 || outcomes["module_timeout"] != 0 || outcomes["timeout"] != 0 {
		t.Fatalf("thaw_xds_removal_first_total %v: want acked 3 (Envoy ACKed and the module echoed), no timeout", outcomes)
	}
	env.noNACKs(t)
}

// removalFirstFigures reads thaw_xds_removal_first_total by outcome and
// thaw_xds_removal_first_seconds' sum and count from env's metrics.
func removalFirstFigures(t testing.TB, env *xdsEnv) (outcomes map[string]float64, sum float64, count uint64) {
	t.Helper()
	fams, err := env.prom.Gather()
	if err != nil {
		t.Fatal(err)
	}
	outcomes = map[string]float64{}
	for _, f := range fams {
		switch f.GetName() {
		case "thaw_xds_removal_first_total":
			for _, m := range f.GetMetric() {
				for _, l := range m.GetLabel() {
					if l.GetName() == "outcome" {
						outcomes[strings.TrimSpace(l.GetValue())] = m.GetCounter().GetValue()
					}
				}
			}
		case "thaw_xds_removal_first_seconds":
			for _, m := range f.GetMetric() {
				sum, count = m.GetHistogram().GetSampleSum(), m.GetHistogram().GetSampleCount()
			}
		}
	}
	return outcomes, sum, count
}
