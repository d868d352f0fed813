package main

import (
	"errors"

	"github.com/spf13/cobra"
)

func newLocalCmd(g *globalFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "local",
		Short: "Run thaw on the embedded default: local processes as backends, a real Envoy",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return errors.New("thaw local is not built yet")
		},
	}
}
