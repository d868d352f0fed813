package autoscaler

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/thaw-dev/thaw/revision"
)

// fakeTarget is an in-memory ScaleTarget. With followReady, ready replicas
// follow every SetScale at once.
type fakeTarget struct {
	mu          sync.Mutex
	current     map[revision.Key]int32
	ready       map[revision.Key]int32
	getErr      map[revision.Key]error
	setErr      map[revision.Key]error
	sets        []scaleCall
	gets        int
	followReady bool
}

type scaleCall struct {
	key      revision.Key
	replicas int32
}

var _ ScaleTarget = (*fakeTarget)(nil)

func newFakeTarget() *fakeTarget {
	return &fakeTarget{
		current: map[revision.Key]int32{}, ready: map[revision.Key]int32{},
		getErr: map[revision.Key]error{}, setErr: map[revision.Key]error{},
		followReady: true,
	}
}

func (f *fakeTarget) GetScale(_ context.Context, key revision.Key) (int32, int32, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.gets++
	if err := f.getErr[key]; err != nil {
		return 0, 0, err
	}
	c, ok := f.current[key]
	if !ok {
		return 0, 0, fmt.Errorf("get %s: %w", key, ErrNotFound)
	}
	return c, f.ready[key], nil
}

func (f *fakeTarget) SetScale(_ context.Context, key revision.Key, replicas int32) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.setErr[key]; err != nil {
		return err
	}
	f.sets = append(f.sets, scaleCall{key, replicas})
	f.current[key] = replicas
	if f.followReady {
		f.ready[key] = replicas
	}
	return nil
}

func (f *fakeTarget) set(key revision.Key, current, ready int32) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.current[key], f.ready[key] = current, ready
}

func (f *fakeTarget) setErrors(key revision.Key, get, set error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.getErr[key], f.setErr[key] = get, set
}

func (f *fakeTarget) scale(key revision.Key) int32 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.current[key]
}

func (f *fakeTarget) calls() ([]scaleCall, int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]scaleCall(nil), f.sets...), f.gets
}

// fakeConfirmer is an in-memory ModeConfirmer.
type fakeConfirmer struct {
	mu    sync.Mutex
	since map[revision.Key]time.Time
}

var _ ModeConfirmer = (*fakeConfirmer)(nil)

func (f *fakeConfirmer) ProxyConfirmedSince(key revision.Key) (time.Time, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	s, ok := f.since[key]
	return s, ok
}

func (f *fakeConfirmer) confirm(key revision.Key, since time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.since == nil {
		f.since = map[revision.Key]time.Time{}
	}
	f.since[key] = since
}

// harness runs a Multiscaler over a registry inside a synctest bubble.
type harness struct {
	t         *testing.T
	reg       *revision.Registry
	ms        *Multiscaler
	col       *Collector
	target    *fakeTarget
	confirmer *fakeConfirmer
	promReg   *prometheus.Registry
	logs      *observer.ObservedLogs
	cancel    context.CancelFunc
	done      chan error

	mu        sync.Mutex
	decisions []Decision
}

func newHarness(t *testing.T, tune func(*MultiscalerOptions)) *harness {
	t.Helper()
	core, logs := observer.New(zap.InfoLevel)
	h := &harness{
		t:         t,
		reg:       revision.NewRegistry(revision.RegistryOptions{}),
		col:       NewCollector(CollectorOptions{}),
		target:    newFakeTarget(),
		confirmer: &fakeConfirmer{},
		promReg:   prometheus.NewRegistry(),
		logs:      logs,
		done:      make(chan error, 1),
	}
	opts := MultiscalerOptions{
		Logger: zap.New(core), Collector: h.col, Target: h.target, Confirmer: h.confirmer,
		Registerer: h.promReg, RevisionMetrics: true, Recorder: scaleRecorder{h.reg},
	}
	if tune != nil {
		tune(&opts)
	}
	h.ms = NewMultiscaler(opts)
	h.ms.OnDecision(func(d Decision) {
		h.mu.Lock()
		defer h.mu.Unlock()
		h.decisions = append(h.decisions, d)
	})
	return h
}

func (h *harness) start() {
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel = cancel
	go func() { h.done <- h.ms.Run(ctx, h.reg) }()
}

func (h *harness) stop() {
	h.t.Helper()
	h.cancel()
	if err := <-h.done; err != nil {
		h.t.Errorf("Run returned %v", err)
	}
}

func (h *harness) published() []Decision {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]Decision(nil), h.decisions...)
}

// load records one sample per second of the given concurrency from "e1"
// for n seconds, sleeping (fake time) between them.
func (h *harness) load(key revision.Key, concurrency float64, n int) {
	for range n {
		h.col.Record(Sample{Revision: key, Source: "e1", Time: time.Now(), Concurrency: concurrency, Requests: concurrency})
		time.Sleep(time.Second)
	}
}

func testSpec(fns ...func(*revision.Spec)) revision.Spec {
	s := revision.DefaultSpec()
	s.Hosts = []string{"a.example.com"}
	s.Target = 10
	s.TargetUtilizationPercentage = 100
	s.StableWindow = 6 * time.Second
	s.ScaleToZeroGracePeriod = 4 * time.Second
	for _, fn := range fns {
		fn(&s)
	}
	return s
}

type keyScale struct {
	key   revision.Key
	scale int32
}

func revisionFor(key revision.Key) *revision.Revision {
	return &revision.Revision{Key: key, Spec: testSpec()}
}

// scaleRecorder records each decision's desired scale in a registry (mode
// control, which records the mode too, lives in package control).
type scaleRecorder struct{ reg *revision.Registry }

func (r scaleRecorder) RecordDecision(d Decision) { r.reg.SetDesiredScale(d.Key, d.DesiredScale) }
