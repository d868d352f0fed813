package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/thaw-dev/thaw/internal/app"
)

func newStatusCmd() *cobra.Command {
	var admin string
	cmd := &cobra.Command{
		Use:   "status [namespace/name]",
		Short: "Print each revision's mode, scale and load from a running thaw (or one revision's)",
		Long: "Print each revision's mode, scale and load from a running thaw's admin /status.\n" +
			"With a revision (namespace/name; thaw local: local/<name>) only its row is asked for\n" +
			"(/status?revision=namespace/name), which costs thaw the same with 10 or 100,000 revisions.",
		Example: "  thaw status\n  thaw status local/hello",
		Args:    cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			path := "/status"
			if len(args) == 1 {
				if _, err := app.ParseStatusRevision(args[0]); err != nil {
					return err
				}
				path += "?" + app.StatusRevisionParam + "=" + url.QueryEscape(args[0])
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), 5*time.Second)
			defer cancel()
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+admin+path, nil)
			if err != nil {
				return err
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				return fmt.Errorf("is thaw running? admin endpoint %s: %w", admin, err)
			}
			defer resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				msg, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
				return fmt.Errorf("admin endpoint %s%s: %s: %s", admin, path, resp.Status, strings.TrimSpace(string(msg)))
			}
			rows, err := app.DecodeStatus(resp.Body)
			if err != nil {
				return err
			}
			if len(args) == 1 {
				// An older thaw ignores the parameter and lists every row.
				rows = slices.DeleteFunc(rows, func(r app.RevisionStatus) bool { return r.Revision != args[0] })
				if len(rows) == 0 {
					return fmt.Errorf("admin endpoint %s: revision %s not found", admin, args[0])
				}
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
