package main

import (
	"fmt"

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
