package main

import (
	"fmt"

	"go.uber.org/zap"

	"github.com/thaw-dev/thaw/internal/app"
	"github.com/thaw-dev/thaw/xds/translate"
)

// defaultFleetOpenFiles is the open-file limit `thaw run` assumes each
// Envoy of its fleet has (--envoy-open-files): 65,536 splits into 256 for
// Envoy's own files, thaw_activator_dst's default 4,096 connections, and
// 61,184 held requests. Container runtimes give from 1,024 (a soft limit
// no process raised) to 1,048,576; the flag is for the fleet's real one.
const defaultFleetOpenFiles = 65536

// runFiles are `thaw run`'s held-request and connection bounds.
type runFiles struct {
	// envoyFiles is --envoy-open-files: each Envoy's open-file limit.
	envoyFiles int
	// maxHeld is --max-held: 0 derives it from envoyFiles, -1 is no bound.
	// It bounds each Envoy's module with --activator=module
	// (state.Update.MaxHeld), this replica's ext_proc activator otherwise.
	maxHeld int
}

// budget checks the flags, sets the release path's connection bounds in
// xcfg from --envoy-open-files as `thaw local` does, and returns the
// bound on requests held at once (0: none): per Envoy on the module path,
// per replica on ext_proc.
// Errors name the flag.
func (f runFiles) budget(logger *zap.Logger, xcfg *translate.Config) (int, error) {
	if f.envoyFiles < app.MinFileLimit {
		return 0, fmt.Errorf("--envoy-open-files %d: below %d", f.envoyFiles, app.MinFileLimit)
	}
	if f.maxHeld < -1 {
		return 0, fmt.Errorf("--max-held %d: want a count, 0 (from --envoy-open-files) or -1 (no bound)", f.maxHeld)
	}
	b := app.NewFileBudget(f.envoyFiles)
	xcfg.ActivatorMaxConnections = uint32(b.Connections)
	xcfg.ActivatorMaxConnectionsPerBackend = uint32(min(b.Connections, translate.DefaultActivatorMaxConnectionsPerBackend))
	held := b.MaxHeld
	switch {
	case f.maxHeld == -1:
		held = 0
	case f.maxHeld > 0:
		held = f.maxHeld
	}
	logger.Info("envoy open-file budget", zap.Int("limit", b.Limit), zap.Int("reserve", b.Reserve),
		zap.Int("activatorConnections", b.Connections), zap.Int("maxHeld", held))
	return held, nil
}
