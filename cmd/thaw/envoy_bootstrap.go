package main

import (
	"github.com/spf13/cobra"

	"github.com/thaw-dev/thaw/envoy"
)

// newEnvoyBootstrapCmd returns `thaw envoy-bootstrap`: it prints the Envoy
// bootstrap YAML for one Envoy (node id, thaw's addresses, admin port).
func newEnvoyBootstrapCmd() *cobra.Command {
	var p envoy.BootstrapParams
	var adminPort uint16
	cmd := &cobra.Command{
		Use:   "envoy-bootstrap",
		Short: "Print the Envoy bootstrap YAML that connects one Envoy to thaw",
		Long: `Print the Envoy bootstrap for one Envoy: delta ADS to thaw's xDS server,
static clusters for the xDS, ext_proc (activator) and stats services, the
internal listener extension, the metrics_service stat sink and admin on
127.0.0.1. Start Envoy with: envoy -c <file>.`,
		Example: `  thaw envoy-bootstrap --node-id envoy-1 --xds-address 127.0.0.1:18000 > envoy.yaml`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			p.AdminPort = uint32(adminPort)
			out, err := envoy.RenderBootstrap(p)
			if err != nil {
				return err
			}
			_, err = cmd.OutOrStdout().Write(out)
			return err
		},
	}
	f := cmd.Flags()
	f.StringVar(&p.NodeID, "node-id", "", "Envoy node id, unique per Envoy (required)")
	f.StringVar(&p.Cluster, "cluster", "thaw", "Envoy node cluster")
	f.StringVar(&p.XDSAddress, "xds-address", "", "thaw's gRPC address host:port for xDS (required)")
	f.StringVar(&p.ExtProcAddress, "extproc-address", "", "ext_proc (activator) gRPC address host:port (default: --xds-address)")
	f.StringVar(&p.StatsAddress, "stats-address", "", "stats sink gRPC address host:port (default: --xds-address)")
	f.Uint16Var(&adminPort, "admin-port", envoy.DefaultAdminPort, "Envoy admin port on 127.0.0.1")
	_ = cmd.MarkFlagRequired("node-id")
	_ = cmd.MarkFlagRequired("xds-address")
	return cmd
}
