package envoy

import (
	"bytes"
	_ "embed"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"text/template"
	"unicode"

	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"
	// Types referenced from the bootstrap's typed configs, registered for
	// validation.
	_ "github.com/envoyproxy/go-control-plane/envoy/config/metrics/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/bootstrap/internal_listener/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/tcp_proxy/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/resource_monitors/downstream_connections/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	_ "github.com/envoyproxy/go-control-plane/envoy/extensions/upstreams/http/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"sigs.k8s.io/yaml"
)

//go:embed bootstrap.yaml
var bootstrapTemplate string

// statsSink holds the stats settings (flush interval, metrics_service sink,
// stats matcher) as top-level bootstrap keys; RenderBootstrap appends it
// verbatim so the bootstrap and the stats sink never disagree.
//
//go:embed stats-sink.yaml
var statsSink string

var tmpl = template.Must(template.New("bootstrap.yaml").
	Funcs(template.FuncMap{"quote": strconv.Quote}).
	Option("missingkey=error").
	Parse(bootstrapTemplate))

// ErrInvalidParams is wrapped by every parameter error of RenderBootstrap.
var ErrInvalidParams = errors.New("invalid bootstrap parameters")

// DefaultAdminPort is Envoy's conventional admin port; admin always binds
// 127.0.0.1.
const DefaultAdminPort = 9901

// BootstrapParams are the per-Envoy inputs of the bootstrap.
type BootstrapParams struct {
	// NodeID is Envoy's node.id: the xDS ACK-tracking key and the stats
	// sample source. Required; unique per Envoy.
	NodeID string
	// Cluster is Envoy's node.cluster (default "thaw").
	Cluster string
	// XDSAddress is thaw's gRPC address "host:port" for ADS. Required. An
	// IP makes a STATIC cluster, a name a STRICT_DNS one.
	XDSAddress string
	// ExtProcAddress is the activator's ext_proc gRPC address (default
	// XDSAddress: one thaw process serves every service).
	ExtProcAddress string
	// StatsAddress is the metrics_service sink's gRPC address (default
	// XDSAddress).
	StatsAddress string
	// AdminPort is the admin listener's port on 127.0.0.1 (default 9901).
	AdminPort uint32
	// TLS, when set, makes the three static clusters use mutual TLS (see
	// ClientTLS; the SDS files come from RenderSDS). Nil: plaintext h2c,
	// for thaw on loopback.
	TLS *ClientTLS
	// Module, when set, adds the activator module's bridge to thaw
	// (listener and cluster thaw_module; see ModuleBridge). Nil: none
	// (the ext_proc activator, or thaw local's module on loopback).
	Module *ModuleBridge
}

// DefaultModuleBridgePort is the loopback port of listener thaw_module.
const DefaultModuleBridgePort = 18009

// ModuleBridge is how the activator module inside a fleet Envoy reaches
// thaw: the module speaks plain HTTP/1.1 to listener thaw_module on
// 127.0.0.1:ListenPort, a TCP proxy to cluster thaw_module at Address
// (thaw run --module-address) with the same mutual TLS as thaw's other
// clusters (TLS). The module thus needs no certificate, no address and no
// leader discovery of its own: Envoy's cluster has them.
type ModuleBridge struct {
	// Address is thaw's module server, "host:port" (an IP: STATIC, a
	// name: STRICT_DNS). Required.
	Address string
	// ListenPort is the bridge's loopback port (default
	// DefaultModuleBridgePort); it must differ from the admin port.
	ListenPort uint32
}

// moduleBridge is a ModuleBridge as the template renders it.
type moduleBridge struct {
	Cluster    staticCluster
	ListenPort uint32
}

// staticCluster is one rendered static cluster.
type staticCluster struct {
	Name, Comment, Type, Host string
	Port                      uint16
}

// RenderBootstrap returns the bootstrap YAML for p. The result is checked
// by parsing it into Envoy's Bootstrap proto and running ValidateAll.
// Errors wrap ErrInvalidParams for bad parameters.
func RenderBootstrap(p BootstrapParams) ([]byte, error) {
	if p.Cluster == "" {
		p.Cluster = "thaw"
	}
	if p.ExtProcAddress == "" {
		p.ExtProcAddress = p.XDSAddress
	}
	if p.StatsAddress == "" {
		p.StatsAddress = p.XDSAddress
	}
	if p.AdminPort == 0 {
		p.AdminPort = DefaultAdminPort
	}
	var errs []error
	for name, v := range map[string]string{"node id": p.NodeID, "cluster": p.Cluster} {
		if v == "" || strings.IndexFunc(v, func(r rune) bool { return !unicode.IsPrint(r) }) >= 0 {
			errs = append(errs, fmt.Errorf("%w: %s %q: want a non-empty printable string", ErrInvalidParams, name, v))
		}
	}
	if p.TLS != nil {
		if err := p.TLS.validate(); err != nil {
			errs = append(errs, err)
		}
	}
	if p.AdminPort > 65535 {
		errs = append(errs, fmt.Errorf("%w: admin port %d: want 1..65535", ErrInvalidParams, p.AdminPort))
	}
	var clusters []staticCluster
	for _, c := range []struct{ name, comment, addr string }{
		{"thaw_xds", "thaw's xDS server (delta ADS).", p.XDSAddress},
		{"thaw_extproc", "thaw's activator (ext_proc ExternalProcessor).", p.ExtProcAddress},
		{"thaw_stats", "thaw's stats sink (MetricsService).", p.StatsAddress},
	} {
		sc, err := parseCluster(c.name, c.addr)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		sc.Comment = c.comment
		clusters = append(clusters, sc)
	}
	var bridge *moduleBridge
	if p.Module != nil {
		bridge = &moduleBridge{ListenPort: p.Module.ListenPort}
		if bridge.ListenPort == 0 {
			bridge.ListenPort = DefaultModuleBridgePort
		}
		sc, err := parseCluster("thaw_module", p.Module.Address)
		if err != nil {
			errs = append(errs, err)
		}
		bridge.Cluster = sc
		if bridge.ListenPort > 65535 || bridge.ListenPort == p.AdminPort {
			errs = append(errs, fmt.Errorf("%w: module bridge port %d: want 1..65535, not the admin port", ErrInvalidParams, bridge.ListenPort))
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	var buf bytes.Buffer
	data := struct {
		BootstrapParams
		Clusters  []staticCluster
		StatsSink string
		Bridge    *moduleBridge
	}{p, clusters, statsSink, bridge}
	if err := tmpl.Execute(&buf, data); err != nil {
		return nil, fmt.Errorf("render bootstrap: %w", err)
	}
	if err := Validate(buf.Bytes()); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// Validate parses a bootstrap YAML into Envoy's Bootstrap proto and runs
// ValidateAll (what Envoy itself checks, short of loading extensions).
func Validate(bootstrapYAML []byte) error {
	j, err := yaml.YAMLToJSON(bootstrapYAML)
	if err != nil {
		return fmt.Errorf("bootstrap YAML: %w", err)
	}
	var b bootstrapv3.Bootstrap
	if err := protojson.Unmarshal(j, &b); err != nil {
		return fmt.Errorf("bootstrap proto: %w", err)
	}
	if err := b.ValidateAll(); err != nil {
		return fmt.Errorf("bootstrap validation: %w", err)
	}
	return nil
}

// parseCluster splits "host:port" and picks STATIC for an IP, STRICT_DNS
// for a name.
func parseCluster(name, addr string) (staticCluster, error) {
	host, portStr, err := net.SplitHostPort(addr)
	if err != nil {
		return staticCluster{}, fmt.Errorf("%w: %s address %q: want host:port: %v", ErrInvalidParams, name, addr, err)
	}
	port, err := strconv.ParseUint(portStr, 10, 16)
	if err != nil || port == 0 || host == "" {
		return staticCluster{}, fmt.Errorf("%w: %s address %q: want host:port with port 1..65535", ErrInvalidParams, name, addr)
	}
	typ := "STRICT_DNS"
	if _, err := netip.ParseAddr(host); err == nil {
		typ = "STATIC"
	}
	return staticCluster{Name: name, Type: typ, Host: host, Port: uint16(port)}, nil
}
