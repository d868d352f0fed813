package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"
)

func init() { extraCommands = append(extraCommands, newInstallModuleCmd) }

// newInstallModuleCmd copies the activator module shipped next to the thaw
// binary (in the image: /thaw-activator.so) into a directory: the fleet's
// Envoy pods run it as an init container that fills the emptyDir Envoy
// loads the module from (manifests/components/activator-module). The image
// has no shell or cp; this is the copy.
func newInstallModuleCmd(*globalFlags) *cobra.Command {
	var from string
	cmd := &cobra.Command{
		Use:   "install-module DIR",
		Short: "Copy the activator module (" + moduleFileName + ") into DIR, for Envoy to load",
		Long: `install-module copies the activator module that ships with thaw (` + moduleFileName + `
next to the thaw binary; /` + moduleFileName + ` in thaw's image) to DIR/` + moduleFileName + `
(read-only, replaced atomically). The Envoy fleet of
manifests/components/activator-module runs it as an init container.`,
		Example: `  thaw install-module /thaw-module`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if from == "" {
				exe, err := os.Executable()
				if err != nil {
					return fmt.Errorf("install-module: locating the thaw binary: %w (pass --from)", err)
				}
				from = filepath.Join(filepath.Dir(exe), moduleFileName)
			}
			dst, err := installModule(from, args[0])
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "installed %s\n", dst)
			return nil
		},
	}
	cmd.Flags().StringVar(&from, "from", "", "the module to copy (default: "+moduleFileName+" next to the thaw binary)")
	return cmd
}

// installModule copies from into dir/thaw-activator.so through a
// temporary file and a rename, so Envoy never sees half a module, and
// returns the destination. Errors name the file that is missing or
// unwritable.
func installModule(from, dir string) (string, error) {
	src, err := os.Open(from)
	if err != nil {
		return "", fmt.Errorf("install-module: %w (thaw's image carries it at /%s; `make build` puts it in bin/)", err, moduleFileName)
	}
	defer src.Close()
	tmp, err := os.CreateTemp(dir, "."+moduleFileName+"-*")
	if err != nil {
		return "", fmt.Errorf("install-module: %w", err)
	}
	_, err = io.Copy(tmp, src)
	err = errors.Join(err, tmp.Chmod(0o444), tmp.Close())
	dst := filepath.Join(dir, moduleFileName)
	if err == nil {
		err = os.Rename(tmp.Name(), dst)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return "", fmt.Errorf("install-module: %w", err)
	}
	return dst, nil
}
