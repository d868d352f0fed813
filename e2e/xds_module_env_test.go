//go:build e2e

package e2e

import (
	"context"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/thaw-dev/thaw/e2e/harness"
	"github.com/thaw-dev/thaw/modsvc"
	"github.com/thaw-dev/thaw/xds/translate"
)

// xdsEnvNode is the node id startXDSEnv's Envoy runs with.
const xdsEnvNode = "e2e-xds"

// moduleConfig makes the env's translation load the activator module
// (bin/thaw-activator.so) with its state stream and reports on a
// loopback modsvc.Server, started by startModuleService.
func (env *xdsEnv) moduleConfig(t testing.TB, cfg *translate.Config, log *zap.Logger) {
	t.Helper()
	so := filepath.Join(harness.RepoRoot(), "bin", "thaw-activator.so")
	if _, err := os.Stat(so); err != nil {
		t.Fatalf("%s missing: run `make build` (%v)", so, err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + ln.Addr().String()
	cfg.Module = &translate.ModuleConfig{Path: so, StateURL: base + modsvc.StatePath, ReportURL: base + modsvc.ReportPath,
		Node: xdsEnvNode, ReportInterval: 200 * time.Millisecond}
	env.modsvc = &modsvc.Server{Registry: env.reg, Logger: log.Named("modsvc")}
	srv := &http.Server{Handler: env.modsvc, ReadHeaderTimeout: 5 * time.Second}
	env.moduleServe = func() { go srv.Serve(ln) }
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		srv.Shutdown(ctx) // state streams end when Envoy stops
		srv.Close()
	})
}

// startModuleService wires the module's state server to the env's xDS
// server (as thaw does: internal/app/module.go) and serves it.
func (env *xdsEnv) startModuleService(t testing.TB) {
	t.Helper()
	env.modsvc.Confirmer = env.srv
	env.srv.SetModuleStates(env.modsvc)
	env.moduleServe()
}
