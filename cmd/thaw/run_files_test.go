package main

import (
	"strings"
	"testing"

	"go.uber.org/zap"

	"github.com/thaw-dev/thaw/xds/translate"
)

// TestRunFilesBudget: thaw run's --envoy-open-files and --max-held give
// the activator's held-request bound and thaw_activator_dst's connection
// bounds, with the same split as thaw local; bad values name their flag.
func TestRunFilesBudget(t *testing.T) {
	for _, tt := range []struct {
		name              string
		files             runFiles
		wantHeld          int
		wantConns, perDst uint32
		wantErr           string
	}{
		{name: "defaults", files: runFiles{envoyFiles: defaultFleetOpenFiles}, wantHeld: 61184, wantConns: 4096, perDst: 1024},
		{name: "a 1024 limit", files: runFiles{envoyFiles: 1024}, wantHeld: 784, wantConns: 112, perDst: 112},
		{name: "20,000", files: runFiles{envoyFiles: 20000}, wantHeld: 17276, wantConns: 2468, perDst: 1024},
		{name: "explicit bound", files: runFiles{envoyFiles: 1024, maxHeld: 5000}, wantHeld: 5000, wantConns: 112, perDst: 112},
		{name: "no bound", files: runFiles{envoyFiles: defaultFleetOpenFiles, maxHeld: -1}, wantHeld: 0, wantConns: 4096, perDst: 1024},
		{name: "limit too low", files: runFiles{envoyFiles: 100}, wantErr: "--envoy-open-files 100: below 256"},
		{name: "bad bound", files: runFiles{envoyFiles: 1024, maxHeld: -2}, wantErr: "--max-held -2"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			xcfg := translate.DefaultConfig()
			held, err := tt.files.budget(zap.NewNop(), &xcfg)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if held != tt.wantHeld || xcfg.ActivatorMaxConnections != tt.wantConns || xcfg.ActivatorMaxConnectionsPerBackend != tt.perDst {
				t.Fatalf("held %d, connections %d/%d per backend; want %d, %d/%d", held,
					xcfg.ActivatorMaxConnections, xcfg.ActivatorMaxConnectionsPerBackend, tt.wantHeld, tt.wantConns, tt.perDst)
			}
		})
	}
}
