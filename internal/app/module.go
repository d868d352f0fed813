package app

import (
	"context"
	"net/http"

	"github.com/thaw-dev/thaw/autoscaler"
	"github.com/thaw-dev/thaw/modsvc"
)

// mountModule serves the activator module's state stream and reports
// (package modsvc) on the admin server, when XDS.Module is set: the
// module in `thaw local`'s Envoy reaches it on loopback. Held counts
// become autoscaler samples, pokes wake the autoscaler, and a backend
// reaches the module only once the Envoy ACKed endpoints listing it
// (xds.Server.ConfirmedBy). State streams end when the admin server
// shuts down (they would otherwise hold its shutdown for 5 s).
func (a *App) mountModule(poker autoscaler.Poker) {
	svc := &modsvc.Server{Registry: a.opts.Registry, Recorder: a.collector, Poker: poker, Confirmer: a.xds,
		WakeCounter: a.ext, Logger: a.log.Named("modsvc")}
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
}
