package main

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"

	"github.com/spf13/pflag"

	"github.com/thaw-dev/thaw/modsvc"
	"github.com/thaw-dev/thaw/xds/translate"
)

// Activator kinds (--activator).
const (
	activatorExtProc = "extproc"
	activatorModule  = "module"
	// moduleFileName is the module `make build` puts next to bin/thaw.
	moduleFileName = "thaw-activator.so"
)

// errAdminPortNotFixed: the module reaches thaw's state stream on the admin
// address, whose port must be fixed.
var errAdminPortNotFixed = errors.New("the module needs a fixed port to reach thaw")

// activatorFlags choose the activator of `thaw local`'s Envoy.
type activatorFlags struct {
	kind   string
	module string
	// explicit is set when --activator was given: an unavailable module is
	// then an error, not a fallback to ext_proc (see choose).
	explicit bool
}

func (f *activatorFlags) add(fl *pflag.FlagSet) {
	fl.StringVar(&f.kind, "activator", activatorModule,
		"activator of Envoy's revision routes: module (the Go dynamic module inside Envoy) or extproc (ext_proc to thaw, an internal listener in proxy mode). "+
			"Left unset, thaw uses the module when its file and this Envoy can load it and falls back to extproc otherwise, logging why; "+
			"set to module, it fails instead (docs/activator.md)")
	fl.StringVar(&f.module, "activator-module", "",
		"the activator module's shared object, `PATH` (default: "+moduleFileName+" next to the thaw binary, where make build leaves it)")
}

// moduleConfig returns the xDS module settings for --activator=module
// (nil for extproc): the module reaches thaw's state stream and report
// endpoint on the admin address, on loopback.
func (f *activatorFlags) moduleConfig(adminAddress, node string) (*translate.ModuleConfig, error) {
	switch f.kind {
	case activatorExtProc:
		return nil, nil
	case activatorModule:
	default:
		return nil, fmt.Errorf("--activator %q: want %s or %s", f.kind, activatorExtProc, activatorModule)
	}
	path := f.module
	if path == "" {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("--activator=module: locating the thaw binary: %w (pass --activator-module)", err)
		}
		path = filepath.Join(filepath.Dir(exe), moduleFileName)
	}
	path, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("--activator=module: %w (run `make build`, or pass --activator-module)", err)
	}
	host, port, err := net.SplitHostPort(adminAddress)
	if err != nil || port == "0" {
		return nil, fmt.Errorf("--activator=module: --admin-address %q: %w", adminAddress, errAdminPortNotFixed)
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	base := url.URL{Scheme: "http", Host: net.JoinHostPort(host, port)}
	state, report := base, base
	state.Path, report.Path = modsvc.StatePath, modsvc.ReportPath
	return &translate.ModuleConfig{Path: path, StateURL: state.String(), ReportURL: report.String(), Node: node}, nil
}
