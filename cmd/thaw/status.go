package main

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/spf13/cobra"

	"github.com/thaw-dev/thaw/internal/app"
)

func newStatusCmd() *cobra.Command {
	var admin string
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Print each revision's mode, scale and load from a running thaw",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx, cancel := context.WithTimeout(cmd.Context(), 5*time.Second)
			defer cancel()
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+admin+"/status", nil)
			if err != nil {
				return err
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				return fmt.Errorf("is thaw running? admin endpoint %s: %w", admin, err)
			}
			defer resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				return fmt.Errorf("admin endpoint %s: %s", admin, resp.Status)
			}
			rows, err := app.DecodeStatus(resp.Body)
			if err != nil {
				return err
			}
			if err := app.WriteStatusTable(cmd.OutOrStdout(), rows); err != nil {
				return err
			}
			return writeExcluded(ctx, cmd.OutOrStdout(), admin)
		},
	}
	cmd.Flags().StringVar(&admin, "admin-address", app.DefaultAdminAddress, "thaw's admin HTTP address")
	return cmd
}
