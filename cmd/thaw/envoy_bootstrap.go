package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/thaw-dev/thaw/envoy"
	"github.com/thaw-dev/thaw/xds/translate"
)

// newEnvoyBootstrapCmd returns `thaw envoy-bootstrap`: it prints the Envoy
// bootstrap YAML for one Envoy (node id, thaw's addresses, admin port).
func newEnvoyBootstrapCmd() *cobra.Command {
	var p envoy.BootstrapParams
	var adminPort uint16
	var tlsc envoy.ClientTLS
	var eg bool
	var moduleAddr string
	var bridgePort uint16
	cmd := &cobra.Command{
		Use:   "envoy-bootstrap",
		Short: "Print the Envoy bootstrap YAML that connects one Envoy to thaw",
		Long: `Print the Envoy bootstrap for one Envoy: delta ADS to thaw's xDS server,
static clusters for the xDS, ext_proc (activator) and stats services, the
internal listener extension, the metrics_service stat sink and admin on
127.0.0.1. Start Envoy with: envoy -c <file>.

With --tls-cert-dir (a directory with tls.crt, tls.key and ca.crt, as
` + "`thaw certgen --output-dir`" + ` writes for the Envoy certificate) the three
clusters use mutual TLS; the two SDS files the bootstrap refers to are
written into --tls-sds-dir. Envoy reloads the certificates when files are
moved into the certificate directory.`,
		Example: `  thaw envoy-bootstrap --node-id envoy-1 --xds-address 127.0.0.1:18000 > envoy.yaml`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			p.AdminPort = uint32(adminPort)
			if moduleAddr != "" {
				p.Module = &envoy.ModuleBridge{Address: moduleAddr, ListenPort: uint32(bridgePort)}
			}
			if tlsc.CertDir != "" {
				if err := writeSDS(&tlsc); err != nil {
					return err
				}
				p.TLS = &tlsc
			}
			render := envoy.RenderBootstrap
			if eg {
				render = func(p envoy.BootstrapParams) ([]byte, error) {
					return envoy.RenderEnvoyGatewayMerge(p, translate.DefaultConfig())
				}
				if p.NodeID == "" {
					p.NodeID = "envoy-gateway" // EG names its Envoys
				}
			}
			out, err := render(p)
			if err != nil {
				return err
			}
			_, err = cmd.OutOrStdout().Write(out)
			return err
		},
	}
	f := cmd.Flags()
	f.StringVar(&p.NodeID, "node-id", "", "Envoy node id, unique per Envoy (required unless --envoy-gateway)")
	f.StringVar(&p.Cluster, "cluster", "thaw", "Envoy node cluster")
	f.StringVar(&p.XDSAddress, "xds-address", "", "thaw's gRPC address host:port for xDS (required)")
	f.StringVar(&p.ExtProcAddress, "extproc-address", "", "ext_proc (activator) gRPC address host:port (default: --xds-address)")
	f.StringVar(&p.StatsAddress, "stats-address", "", "stats sink gRPC address host:port (default: --xds-address)")
	f.Uint16Var(&adminPort, "admin-port", envoy.DefaultAdminPort, "Envoy admin port on 127.0.0.1")
	f.StringVar(&tlsc.CertDir, "tls-cert-dir", "", "mutual TLS to thaw: directory with Envoy's tls.crt, tls.key and ca.crt (empty: plaintext)")
	f.StringVar(&tlsc.SDSDir, "tls-sds-dir", "", "where the SDS files for --tls-cert-dir are written (default: --tls-cert-dir)")
	f.StringVar(&tlsc.ServerName, "tls-server-name", "thaw-grpc.thaw-system.svc", "SNI sent to thaw and DNS name required in thaw's certificate")
	f.BoolVar(&eg, "envoy-gateway", false, "print the fragment for Envoy Gateway's EnvoyProxy spec.bootstrap (type Merge) instead: thaw's static clusters, thaw_activator_dst, the internal listener thaw_activator and the stats sink, without node, ADS or admin (docs/envoy-gateway.md); --node-id is then not needed")
	f.StringVar(&moduleAddr, "module-address", "", "with thaw run --activator=module: thaw's --module-address host:port; adds the module's loopback bridge (listener and cluster thaw_module, docs/activator.md)")
	f.Uint16Var(&bridgePort, "module-bridge-port", envoy.DefaultModuleBridgePort, "loopback port of the module bridge (thaw run --module-bridge-port)")
	_ = cmd.MarkFlagRequired("xds-address")
	return cmd
}

// writeSDS makes c's directories absolute and writes its SDS files.
func writeSDS(c *envoy.ClientTLS) error {
	if c.SDSDir == "" {
		c.SDSDir = c.CertDir
	}
	for _, d := range []*string{&c.CertDir, &c.SDSDir} {
		abs, err := filepath.Abs(*d)
		if err != nil {
			return fmt.Errorf("tls directory %s: %w", *d, err)
		}
		*d = abs
	}
	files, err := envoy.RenderSDS(*c)
	if err != nil {
		return err
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(c.SDSDir, name), data, 0o644); err != nil {
			return fmt.Errorf("write SDS file: %w", err)
		}
	}
	return nil
}
