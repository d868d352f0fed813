package activator

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/thaw-dev/thaw/autoscaler"
	"github.com/thaw-dev/thaw/revision"
)

var demo = revision.Key{Namespace: "default", Name: "demo"}

type fakePoker struct {
	mu    sync.Mutex
	pokes []revision.Key
}

func (p *fakePoker) Poke(k revision.Key) { p.mu.Lock(); p.pokes = append(p.pokes, k); p.mu.Unlock() }
func (p *fakePoker) count() int          { p.mu.Lock(); defer p.mu.Unlock(); return len(p.pokes) }

var _ autoscaler.Poker = (*fakePoker)(nil)

// env is an activator fed by a real registry (holdoff 0: setters publish at
// once).
type env struct {
	t      *testing.T
	reg    *revision.Registry
	act    *Activator
	poker  *fakePoker
	ctx    context.Context // canceled by stop: ends held test requests
	cancel context.CancelFunc
	done   chan struct{}
}

// newEnv starts Run; call it inside a synctest bubble and synctest.Wait()
// after registry changes to let Run apply them.
func newEnv(t *testing.T, opts Options) *env {
	t.Helper()
	e := &env{t: t, reg: revision.NewRegistry(revision.RegistryOptions{}), poker: &fakePoker{}, done: make(chan struct{})}
	if opts.Poker == nil {
		opts.Poker = e.poker
	}
	e.act = New(opts)
	e.ctx, e.cancel = context.WithCancel(context.Background())
	go func() { defer close(e.done); e.act.Run(e.ctx, e.reg) }()
	t.Cleanup(e.stop)
	return e
}

func (e *env) stop() {
	e.cancel()
	<-e.done
}

// upsert sets a revision with the given limits and marks the registry
// synced.
func (e *env) upsert(key revision.Key, cc int, hold time.Duration, depth int) {
	e.t.Helper()
	s := revision.DefaultSpec()
	s.Hosts = []string{key.Name + ".example.com"}
	s.Port = 8080
	s.ContainerConcurrency, s.HoldTimeout, s.QueueDepth = cc, hold, depth
	if err := s.Validate(); err != nil {
		e.t.Fatalf("test spec: %v", err)
	}
	e.reg.Upsert(key, s)
	e.reg.SetSynced()
}

func (e *env) backends(key revision.Key, addrs ...string) {
	bs := make([]revision.Backend, 0, len(addrs))
	for _, a := range addrs {
		bs = append(bs, revision.Backend{Address: a, Port: 8080, Ready: true})
	}
	e.reg.SetBackends(key, bs)
}

type result struct {
	pod     Pod
	release func()
	err     error
}

// acquireAsync starts Acquire in a goroutine and returns its result channel.
func (e *env) acquireAsync(ctx context.Context, key revision.Key) <-chan result {
	ch := make(chan result, 1)
	ctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(e.ctx, cancel)
	go func() {
		defer stop()
		defer cancel()
		p, rel, err := e.act.Acquire(ctx, key)
		ch <- result{p, rel, err}
	}()
	return ch
}

func mustAcquire(t *testing.T, a *Activator, key revision.Key) (Pod, func()) {
	t.Helper()
	p, rel, err := a.Acquire(context.Background(), key)
	if err != nil {
		t.Fatalf("Acquire(%s) = %v, want a pod", key, err)
	}
	return p, rel
}

func wantErr(t *testing.T, got, want error) {
	t.Helper()
	if !errors.Is(got, want) {
		t.Fatalf("err = %v, want %v", got, want)
	}
}

// poll returns the result if Acquire returned.
func poll(ch <-chan result) (result, bool) {
	select {
	case r := <-ch:
		return r, true
	default:
		return result{}, false
	}
}

func bubble(t *testing.T, f func(t *testing.T)) {
	synctest.Test(t, f)
}
