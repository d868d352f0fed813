package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// newLogger returns a JSON logger, or a console logger with --dev.
func newLogger(g *globalFlags) (*zap.Logger, error) {
	level, err := zapcore.ParseLevel(g.logLevel)
	if err != nil {
		return nil, fmt.Errorf("--log-level: %w", err)
	}
	cfg := zap.NewProductionConfig()
	if g.dev {
		cfg = zap.NewDevelopmentConfig()
		cfg.EncoderConfig.EncodeLevel = zapcore.CapitalColorLevelEncoder
	}
	cfg.Level = zap.NewAtomicLevelAt(level)
	cfg.Sampling = nil
	return cfg.Build()
}

// runWithSignals builds the logger and runs fn with a context that ends on
// SIGINT or SIGTERM.
func runWithSignals(cmd *cobra.Command, g *globalFlags, fn func(ctx context.Context, logger *zap.Logger) error) error {
	logger, err := newLogger(g)
	if err != nil {
		return err
	}
	defer func() { _ = logger.Sync() }()
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return fn(ctx, logger)
}
