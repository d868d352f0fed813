package main

import (
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/thaw-dev/thaw/internal/modcheck"
	"github.com/thaw-dev/thaw/xds/translate"
)

// Fallback reasons of `thaw local`'s default activator beyond modcheck's
// (the thaw_activator_info metric's fallback_reason label).
const (
	fallbackEnvoyGateway modcheck.Reason = "envoy_gateway"
	fallbackAdminPort    modcheck.Reason = "admin_port_not_fixed"
)

// chooseEnv is what the activator choice depends on besides the flags.
type chooseEnv struct {
	envoy        string // Envoy binary ("" with Envoy Gateway)
	eg           bool   // --eg-extension: Envoy Gateway's Envoy, not ours
	adminAddress string
	node         string
}

// activatorChoice is the activator `thaw local` runs: Module nil means
// ext_proc; Fallback says why the module was not used when it was the
// default ("" when it is used, or when ext_proc was asked for).
type activatorChoice struct {
	Module   *translate.ModuleConfig
	Fallback modcheck.Reason
}

// Kind is activatorModule or activatorExtProc.
func (c activatorChoice) Kind() string {
	if c.Module != nil {
		return activatorModule
	}
	return activatorExtProc
}

// choose picks the activator before Envoy starts. --activator=extproc is
// ext_proc. The module, whether the default or asked for, needs its file,
// a fixed admin port (its state stream), and an Envoy binary that exports
// every callback it calls (modcheck.Check, which reads both files and
// loads neither). With Envoy Gateway (--eg-extension) the default is
// ext_proc: EG's Envoys load the module only where their EnvoyProxy
// installs it, which thaw cannot check; --activator=module uses it there. When one is
// missing, the default falls back to ext_proc with a warning that says
// why; an explicit --activator=module fails with that reason instead. A
// check that could not be made (modcheck.Error.Unverified: Envoy is not an
// ELF file, or its ABI version string was not found) is a fallback for
// the default and only a warning for an explicit --activator=module.
func (f *activatorFlags) choose(log *zap.Logger, env chooseEnv) (activatorChoice, error) {
	switch f.kind {
	case activatorExtProc:
		return activatorChoice{}, nil
	case activatorModule:
	default:
		return activatorChoice{}, fmt.Errorf("--activator %q: want %s or %s", f.kind, activatorModule, activatorExtProc)
	}
	fallback := func(reason modcheck.Reason, err error) (activatorChoice, error) {
		log.Warn("activator: the dynamic module cannot run here; falling back to ext_proc (pass --activator=extproc to choose it, or --activator=module to make this an error)",
			zap.String("reason", string(reason)), zap.Error(err), zap.String("envoy", env.envoy))
		return activatorChoice{Fallback: reason}, nil
	}
	if env.eg {
		// EG's Envoys are not ours to check: they load the module only
		// where their EnvoyProxy installs it (docs/envoy-gateway.md), so
		// the module there is a choice the operator makes.
		if !f.explicit {
			log.Info("activator: ext_proc (Envoy Gateway's Envoys load the module only where their EnvoyProxy installs it; pass --activator=module for that)")
			return activatorChoice{Fallback: fallbackEnvoyGateway}, nil
		}
		m, err := f.moduleConfig(env.adminAddress, env.node)
		if err != nil {
			return activatorChoice{}, err
		}
		return activatorChoice{Module: m}, nil
	}
	m, err := f.moduleConfig(env.adminAddress, env.node)
	if err != nil {
		if f.explicit {
			return activatorChoice{}, err
		}
		reason := modcheck.ModuleMissing
		if errors.Is(err, errAdminPortNotFixed) {
			reason = fallbackAdminPort
		}
		return fallback(reason, err)
	}
	if err := modcheck.Check(env.envoy, m.Path); err != nil {
		var ce *modcheck.Error
		if !errors.As(err, &ce) {
			ce = &modcheck.Error{Reason: modcheck.EnvoyUnreadable, Unverified: true, Err: err}
		}
		switch {
		case !f.explicit:
			return fallback(ce.Reason, ce.Err)
		case ce.Unverified:
			log.Warn("activator: could not verify that this Envoy can load the dynamic module; loading it as --activator=module asks",
				zap.String("reason", string(ce.Reason)), zap.Error(ce.Err), zap.String("envoy", env.envoy), zap.String("module", m.Path))
		default:
			return activatorChoice{}, fmt.Errorf("--activator=module: %w (pass --activator=extproc to use ext_proc)", err)
		}
	}
	return activatorChoice{Module: m}, nil
}

// registerActivatorInfo exports thaw_activator_info: 1 for the activator
// this `thaw local` runs, with the reason the default module was not used.
func registerActivatorInfo(reg prometheus.Registerer, c activatorChoice) error {
	g := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "thaw_activator_info",
		Help: "The activator of thaw's Envoy (activator: module or extproc); fallback_reason says why the default module was not used (empty when it is, or when extproc was asked for)."},
		[]string{"activator", "fallback_reason"})
	g.WithLabelValues(c.Kind(), string(c.Fallback)).Set(1)
	return reg.Register(g)
}
