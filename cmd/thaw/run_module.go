package main

import (
	"crypto/tls"
	"fmt"
	"net"
	"net/url"
	"path"
	"strconv"

	"github.com/spf13/pflag"
	"go.uber.org/zap"

	"github.com/thaw-dev/thaw/envoy"
	"github.com/thaw-dev/thaw/internal/tlsreload"
	"github.com/thaw-dev/thaw/modsvc"
	"github.com/thaw-dev/thaw/xds/translate"
)

// Defaults of the fleet's activator module (thaw run --activator=module).
const (
	// defaultFleetModulePath is where the fleet's Envoy finds the module:
	// manifests/components/activator-module copies it there from thaw's
	// image (init container, emptyDir).
	defaultFleetModulePath = "/etc/thaw-module/" + moduleFileName
	// defaultModuleAddress is where thaw serves the modules' state and
	// reports (in a pod: $(POD_IP):18001).
	defaultModuleAddress = "127.0.0.1:18001"
)

// fleetModuleFlags choose the activator of the fleet's Envoys (thaw run).
type fleetModuleFlags struct {
	kind       string
	path       string
	address    string
	bridgePort int
}

func (f *fleetModuleFlags) add(fl *pflag.FlagSet) {
	fl.StringVar(&f.kind, "activator", activatorExtProc,
		"activator of the fleet's revision routes: extproc (ext_proc to thaw) or module (the Go dynamic module inside each Envoy; the fleet must load it, as manifests/ do: an Envoy without it refuses the listener; docs/activator.md, \"Which activator a fleet runs\")")
	fl.StringVar(&f.path, "activator-module", defaultFleetModulePath,
		"with --activator=module: absolute path of "+moduleFileName+" on the fleet's Envoy pods")
	fl.StringVar(&f.address, "module-address", defaultModuleAddress,
		"with --activator=module: address thaw serves the modules' state stream and reports on (mutual TLS with the --tls-* files; in a pod: $(POD_IP):18001)")
	fl.IntVar(&f.bridgePort, "module-bridge-port", envoy.DefaultModuleBridgePort,
		"with --activator=module: the loopback port of each Envoy's listener thaw_module, through which its module reaches --module-address (the fleet bootstrap's envoy.ModuleBridge)")
}

// moduleConfig returns the xDS module settings (nil for extproc): every
// Envoy gets the same filter, naming its loopback bridge and no node (each
// module takes its Envoy's --service-node).
func (f *fleetModuleFlags) moduleConfig() (*translate.ModuleConfig, error) {
	switch f.kind {
	case activatorExtProc:
		return nil, nil
	case activatorModule:
	default:
		return nil, fmt.Errorf("--activator %q: want %s or %s", f.kind, activatorExtProc, activatorModule)
	}
	if !path.IsAbs(f.path) {
		return nil, fmt.Errorf("--activator-module %q: want an absolute path on the Envoy pods", f.path)
	}
	if f.bridgePort <= 0 || f.bridgePort > 65535 {
		return nil, fmt.Errorf("--module-bridge-port %d: want 1..65535", f.bridgePort)
	}
	if _, port, err := net.SplitHostPort(f.address); err != nil || port == "0" {
		return nil, fmt.Errorf("--module-address %q: want host:port with a fixed port (the fleet bootstrap names it)", f.address)
	}
	base := url.URL{Scheme: "http", Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(f.bridgePort))}
	state, report := base, base
	state.Path, report.Path = modsvc.StatePath, modsvc.ReportPath
	return &translate.ModuleConfig{Path: f.path, StateURL: state.String(), ReportURL: report.String()}, nil
}

// moduleTLS is the module server's TLS: the gRPC port's files, ALPN
// http/1.1; nil when thaw serves gRPC in plaintext.
func moduleTLS(logger *zap.Logger, files tlsreload.Files) (*tls.Config, error) {
	if files == (tlsreload.Files{}) {
		return nil, nil
	}
	r, err := tlsreload.New(tlsreload.Options{Files: files, Logger: logger.Named("tls.module")})
	if err != nil {
		return nil, err
	}
	return r.HTTP1ServerConfig(), nil
}
