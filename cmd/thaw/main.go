package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
)

func main() {
	if err := newRootCmd().Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "thaw:", err)
		os.Exit(1)
	}
}

// globalFlags are shared by every subcommand.
type globalFlags struct {
	dev      bool
	logLevel string
}

func newRootCmd() *cobra.Command {
	g := &globalFlags{}
	root := &cobra.Command{
		Use:           "thaw",
		Short:         "Request-driven autoscaling with scale to zero for Envoy",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.PersistentFlags().BoolVar(&g.dev, "dev", false, "human-readable console logs instead of JSON")
	root.PersistentFlags().StringVar(&g.logLevel, "log-level", "info", "log level: debug, info, warn, error")
	root.AddCommand(newVersionCmd(), newLocalCmd(g), newRunCmd(g), newStatusCmd(), newEnvoyBootstrapCmd())
	for _, extra := range extraCommands {
		root.AddCommand(extra(g))
	}
	return root
}

// extraCommands lets subcommands defined in other files register themselves.
var extraCommands []func(*globalFlags) *cobra.Command
