package local

import (
	"context"
	"encoding/json"
	"net/http"
	"sort"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/thaw-dev/thaw/revision"
)

// BenchmarkScaleFromZero measures one 0→1→0 cycle of the example workload:
// SetScale(1) until the backend is in the registry. It reports the start
// latency (SetScale to backend published) and the detection delay (process
// listening, from the workload's own clock, to backend published), p50 and
// max over b.N cycles.
func BenchmarkScaleFromZero(b *testing.B) {
	spec := revision.DefaultSpec()
	spec.Hosts = []string{"bench.localhost"}
	rev := RevisionConfig{
		Key: revision.Key{Namespace: DefaultNamespace, Name: "bench"}, Spec: spec,
		Command: []string{workloadBin, "--port", PortPlaceholder}, Dir: b.TempDir(),
		Readiness:   Probe{HTTPPath: "/healthz", Period: time.Second, Timeout: time.Second, FailureThreshold: 3},
		StopTimeout: 5 * time.Second,
	}
	reg := revision.NewRegistry(revision.RegistryOptions{})
	p := New(Options{Logger: zap.NewNop(), Registry: reg, Config: configOf(rev), DrainPeriod: -1, DrainTimeout: -1})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	defer func() { cancel(); <-done }()
	wctx, wcancel := context.WithTimeout(ctx, 5*time.Minute)
	defer wcancel()
	var start, detect []time.Duration
	for b.Loop() {
		t0 := time.Now()
		if err := p.SetScale(ctx, rev.Key, 1); err != nil {
			b.Fatal(err)
		}
		s, err := reg.WaitFor(wctx, func(s *revision.Snapshot) bool {
			r := s.Get(rev.Key)
			return r != nil && revision.ReadyCount(r.Backends) == 1
		})
		if err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		be := s.Get(rev.Key).Backends[0]
		resp, err := http.Get("http://" + be.HostPort() + "/stats")
		if err != nil {
			b.Fatal(err)
		}
		var st struct {
			Listening int64 `json:"listening_unix_nano"`
		}
		_ = json.NewDecoder(resp.Body).Decode(&st)
		resp.Body.Close()
		start = append(start, t1.Sub(t0))
		detect = append(detect, t1.Sub(time.Unix(0, st.Listening)))
		if err := p.SetScale(ctx, rev.Key, 0); err != nil {
			b.Fatal(err)
		}
		for { // wait (bounded by wctx) until the process is gone
			if _, _, err := p.GetScale(ctx, rev.Key); err != nil || wctx.Err() != nil || instances(p, rev.Key) == 0 {
				break
			}
			time.Sleep(time.Millisecond)
		}
	}
	report := func(name string, ds []time.Duration) {
		sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
		b.ReportMetric(float64(ds[len(ds)/2])/1e6, name+"-p50-ms")
		b.ReportMetric(float64(ds[len(ds)-1])/1e6, name+"-max-ms")
	}
	report("start", start)
	report("detect", detect)
}

func instances(p *Platform, key revision.Key) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.revMap()[key].instances)
}
