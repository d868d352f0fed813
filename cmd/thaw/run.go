package main

import (
	"errors"

	"github.com/spf13/cobra"
)

func newRunCmd(g *globalFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "run",
		Short: "Run thaw in a Kubernetes cluster (revisions from annotated workloads)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return errors.New("thaw run (Kubernetes mode) is not built yet: use `thaw local -f FILE`")
		},
	}
}
