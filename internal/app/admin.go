package app

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.uber.org/zap"
)

// AdminServer serves thaw's admin HTTP endpoints: /metrics (Prometheus),
// /status (JSON list of RevisionStatus; ?revision=namespace/name for one,
// see statusHandler), /healthz, /readyz and, when asked
// for, Go profiles under /debug/pprof/.
type AdminServer struct {
	srv *http.Server
	ln  net.Listener
	mux *http.ServeMux
}

// NewAdminServer listens on addr (keep it on loopback: it is unauthenticated)
// and returns a server ready to Serve. ready reports readiness for /readyz.
// pprof adds the Go profiles under /debug/pprof/; they reveal memory
// contents and cost CPU, so they are served only when asked for (thaw
// local: when addr is loopback, see IsLoopbackAddress; thaw run: --pprof).
func NewAdminServer(addr string, gatherer prometheus.Gatherer, status StatusSource, ready func() bool, pprofOn bool) (*AdminServer, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("admin listener %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(gatherer, promhttp.HandlerOpts{}))
	mux.HandleFunc("/status", statusHandler(status))
	if pprofOn {
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		if !ready() {
			http.Error(w, "not ready", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	return &AdminServer{ln: ln, mux: mux, srv: &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}}, nil
}

// Handle adds an endpoint; call it before Run.
func (a *AdminServer) Handle(pattern string, h http.Handler) { a.mux.Handle(pattern, h) }

// Addr returns the bound address.
func (a *AdminServer) Addr() string { return a.ln.Addr().String() }

// Run serves until ctx ends, then shuts down within 5 s.
func (a *AdminServer) Run(ctx context.Context, logger *zap.Logger) {
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = a.srv.Shutdown(sctx)
	}()
	if err := a.srv.Serve(a.ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		logger.Error("admin server stopped", zap.Error(err))
	}
}
