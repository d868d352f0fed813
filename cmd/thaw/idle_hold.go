package main

import (
	"go.uber.org/zap"

	"github.com/spf13/pflag"
)

// idleHoldPathFlag is --idle-hold-path (thaw local, thaw run): whether a
// revision without any backend has no cluster in Envoy (issue 28,
// translate.Config.IdleHoldPath).
//
// Its default (true) takes effect only where the activator is the module:
// there a wake and a return to zero add or remove one cluster and its
// assignment and no route changes (translate.ClusterRoutes). With
// ext_proc the hold path changes the revision's virtual host on every wake
// and return, and Envoy rebuilds its route table for each, so ext_proc
// keeps every revision's cluster unless the flag is given explicitly. With
// the Envoy Gateway extension it is off unless given (internal/app then
// turns it off and says why): EG's Envoys hold an idle revision through its
// assignment.
type idleHoldPathFlag struct {
	value    bool
	explicit bool
}

// add registers the flag on fl.
func (f *idleHoldPathFlag) add(fl *pflag.FlagSet) {
	fl.BoolVar(&f.value, "idle-hold-path", true, idleHoldPathUsage)
}

// resolve returns whether the hold path is on for an activator that is
// the module (module) or ext_proc, with or without the Envoy Gateway
// extension (eg); fl says whether the flag was given. It logs the choice.
func (f *idleHoldPathFlag) resolve(logger *zap.Logger, fl *pflag.FlagSet, module, eg bool) bool {
	f.explicit = fl.Changed("idle-hold-path")
	on := f.value && (f.explicit || (module && !eg))
	logger.Info("idle hold path", zap.Bool("on", on), zap.Bool("explicit", f.explicit), zap.Bool("module", module))
	return on
}

// idleHoldPathUsage is the help of --idle-hold-path (thaw local, thaw run).
const idleHoldPathUsage = "give a revision without any backend no cluster in Envoy (an idle revision costs Envoy one virtual host " +
	"instead of a cluster, its endpoints and stats). On by default where the activator is the module: every revision route " +
	"takes its cluster from a header the module writes, so waking and going idle add or remove the cluster only; " +
	"--idle-hold-path=false keeps every revision's cluster. With ext_proc only when given: the route then leads to " +
	"a shared hold path and waking and going idle change its virtual host, which makes Envoy rebuild its route table " +
	"(docs/scaling.md); off with Envoy Gateway"
