package app

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"

	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/thaw-dev/thaw/autoscaler"
	"github.com/thaw-dev/thaw/modsvc"
	"github.com/thaw-dev/thaw/revision"
	"github.com/thaw-dev/thaw/xds/translate"
)

// mountModule serves the activator module's state stream and reports
// (package modsvc) when XDS.Module is set: on the admin server without
// Options.ModuleAddress (thaw local: the module in thaw's own Envoy
// reaches it on loopback), else on a server of its own (thaw run: mutual
// TLS, reached by each fleet Envoy's module through the Envoy's loopback
// bridge, docs/activator.md). Held counts become autoscaler samples, pokes
// wake the autoscaler, and a backend reaches a node's module only once
// that node ACKed endpoints listing it (xds.Server.ConfirmedBy). State
// streams end when their server shuts down (they would otherwise hold its
// shutdown for 5 s) and, on the module server, when this replica stops
// leading (the module reconnects through Envoy to the new leader).
func (a *App) mountModule(poker autoscaler.Poker) error {
	svc := &modsvc.Server{Registry: a.opts.Registry, Recorder: a.collector, Poker: poker, Confirmer: a.xds,
		WakeCounter: a.ext, HeldLimitCounter: a.ext, MaxHeld: a.act.MaxHeld, Logger: a.log.Named("modsvc"),
		// Unconfirmed backends through the ORIGINAL_DST cluster need
		// every revision route's cluster written by the module (idle
		// hold path, off with Envoy Gateway: app.go).
		Early: translate.ClusterRoutes(&a.opts.XDS) && !a.opts.EGExtension}
	a.modsvc = svc
	// Removal first also waits for the modules to apply a removal.
	a.xds.SetModuleStates(svc)
	if err := a.metrics.Register(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "thaw_module_connected_nodes",
		Help: "Envoys (node ids) with an activator-module state stream open on this replica."},
		func() float64 { return float64(svc.ConnectedNodes()) })); err != nil {
		return fmt.Errorf("register metrics: %w", err)
	}
	if a.opts.ModuleAddress == "" {
		stopped, stop := context.WithCancel(context.Background())
		a.admin.srv.RegisterOnShutdown(stop)
		h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			ctx, cancel := context.WithCancel(r.Context())
			defer context.AfterFunc(stopped, cancel)()
			defer cancel()
			svc.ServeHTTP(w, r.WithContext(ctx))
		})
		a.admin.Handle(modsvc.StatePath, h)
		a.admin.Handle(modsvc.ReportPath, h)
		return nil
	}
	ln, err := listen(ListenPort{Address: a.opts.ModuleAddress, Flag: "--module-address"})
	if err != nil {
		return fmt.Errorf("module listener: %w", err)
	}
	if a.opts.ModuleTLS != nil {
		ln = tls.NewListener(ln, a.opts.ModuleTLS)
	} else if !IsLoopbackAddress(a.opts.ModuleAddress) {
		a.log.Warn("the activator module's state and reports are served in plaintext on a non-loopback address: any client that reaches it could act as an Envoy's module; set the --tls-* flags (docs/security.md)",
			zap.String("address", a.opts.ModuleAddress))
	}
	a.moduleLn = ln
	a.moduleSrv = &http.Server{Handler: a.leaderOnly(svc), ReadHeaderTimeout: 5 * time.Second,
		ErrorLog: zap.NewStdLog(a.log.Named("modsvc.http"))}
	return nil
}

// activatorCounts returns revision key's requests held and in flight for
// `thaw status`: the ext_proc activator's, plus, with the module, the
// modules' last reports (modsvc.Server.Counts).
func (a *App) activatorCounts(key revision.Key) (held, inFlight int) {
	held, inFlight = a.act.Stats(key)
	if a.modsvc != nil {
		h, f := a.modsvc.Counts(key)
		held, inFlight = held+h, inFlight+f
	}
	return held, inFlight
}

// ModuleAddress returns the bound address of the module server ("" when
// the module's endpoints are on the admin server or off).
func (a *App) ModuleAddress() string {
	if a.moduleLn == nil {
		return ""
	}
	return a.moduleLn.Addr().String()
}

// leaderOnly serves modsvc.HealthPath (200 while this replica leads and is
// ready, else 503: the fleet bootstrap's health check on cluster
// thaw_module, so each Envoy's bridge connects to the leader) and, while
// leading, the state stream and reports; a follower answers 503, since
// only the leader tracks every Envoy's ACKs and runs the autoscaler. A
// state stream ends when leadership is lost.
func (a *App) leaderOnly(svc *modsvc.Server) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		lost, leading := a.lead.current()
		if r.URL.Path == modsvc.HealthPath {
			if !leading || !a.ready.Load() {
				http.Error(w, "not leading", http.StatusServiceUnavailable)
				return
			}
			fmt.Fprintln(w, "ok")
			return
		}
		if !leading {
			http.Error(w, "not the leader: reconnect", http.StatusServiceUnavailable)
			return
		}
		ctx, cancel := context.WithCancel(r.Context())
		defer cancel()
		go func() {
			select {
			case <-lost:
				cancel()
			case <-ctx.Done():
			}
		}()
		svc.ServeHTTP(w, r.WithContext(ctx))
	})
}

// runModuleServer serves the module server until ctx ends; open state
// streams end with it.
func (a *App) runModuleServer(ctx context.Context) error {
	stopped, stop := context.WithCancel(context.Background())
	a.moduleSrv.RegisterOnShutdown(stop)
	base := a.moduleSrv.Handler
	a.moduleSrv.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rctx, cancel := context.WithCancel(r.Context())
		defer context.AfterFunc(stopped, cancel)()
		defer cancel()
		base.ServeHTTP(w, r.WithContext(rctx))
	})
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = a.moduleSrv.Shutdown(sctx)
	}()
	if err := a.moduleSrv.Serve(a.moduleLn); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// leadership is whether this replica leads, with a channel closed when a
// term ends (state streams of that term end with it).
type leadership struct {
	mu      sync.Mutex
	leading bool
	lost    chan struct{}
}

func (l *leadership) set(leading bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if leading == l.leading {
		return
	}
	l.leading = leading
	if leading {
		l.lost = make(chan struct{})
	} else {
		close(l.lost)
	}
}

// current returns the channel closed when the current term ends, and
// whether this replica leads.
func (l *leadership) current() (<-chan struct{}, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lost, l.leading
}
