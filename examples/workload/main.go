package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"
)

type config struct {
	address      string
	port         int
	startupDelay time.Duration
	latency      time.Duration
	body         string
	drainTimeout time.Duration
	protocol     string
}

func main() {
	log.SetFlags(log.Lmicroseconds)
	log.SetPrefix(fmt.Sprintf("workload[%d] ", os.Getpid()))
	cfg, err := parseConfig(os.Args[1:], os.Getenv)
	if err != nil {
		log.Fatal(err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if err := run(ctx, cfg); err != nil {
		log.Fatal(err)
	}
}

// parseConfig reads flags, with defaults taken from the environment.
func parseConfig(args []string, getenv func(string) string) (config, error) {
	var cfg config
	fs := flag.NewFlagSet("workload", flag.ContinueOnError)
	var envErr error
	envInt := func(name string, def int) int {
		if v := getenv(name); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil {
				envErr = fmt.Errorf("%s=%q: want an integer", name, v)
			}
			return n
		}
		return def
	}
	envDur := func(name string, def time.Duration) time.Duration {
		if v := getenv(name); v != "" {
			d, err := time.ParseDuration(v)
			if err != nil {
				envErr = fmt.Errorf("%s=%q: want a duration such as 100ms", name, v)
			}
			return d
		}
		return def
	}
	envStr := func(name, def string) string {
		if v := getenv(name); v != "" {
			return v
		}
		return def
	}
	fs.StringVar(&cfg.address, "address", envStr("ADDRESS", "127.0.0.1"), "listen address (env ADDRESS)")
	fs.IntVar(&cfg.port, "port", envInt("PORT", 8080), "listen port (env PORT)")
	fs.DurationVar(&cfg.startupDelay, "startup-delay", envDur("STARTUP_DELAY", 0), "wait this long before listening (env STARTUP_DELAY)")
	fs.DurationVar(&cfg.latency, "latency", envDur("LATENCY", 0), "time each request takes (env LATENCY)")
	fs.StringVar(&cfg.body, "body", envStr("BODY", "hello"), "first line of every answer (env BODY)")
	fs.DurationVar(&cfg.drainTimeout, "drain-timeout", envDur("DRAIN_TIMEOUT", 30*time.Second), "longest graceful drain on SIGTERM (env DRAIN_TIMEOUT)")
	fs.StringVar(&cfg.protocol, "protocol", envStr("PROTOCOL", "http1"), "http1 or h2c (gRPC) (env PROTOCOL)")
	if envErr != nil {
		return cfg, envErr
	}
	if err := fs.Parse(args); err != nil {
		return cfg, err
	}
	if cfg.port < 0 || cfg.port > 65535 {
		return cfg, fmt.Errorf("port %d: want 0..65535", cfg.port)
	}
	if cfg.protocol != "http1" && cfg.protocol != "h2c" {
		return cfg, fmt.Errorf("protocol %q: want http1 or h2c", cfg.protocol)
	}
	return cfg, nil
}

// run waits the startup delay, serves until ctx ends, then drains.
func run(ctx context.Context, cfg config) error {
	started := time.Now()
	if cfg.startupDelay > 0 {
		log.Printf("starting: listening in %s", cfg.startupDelay)
		select {
		case <-time.After(cfg.startupDelay):
		case <-ctx.Done():
			log.Printf("stopped during startup delay")
			return nil
		}
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(cfg.address, strconv.Itoa(cfg.port)))
	if err != nil {
		return err
	}
	port := ln.Addr().(*net.TCPAddr).Port
	srv := newServer(cfg, port, started, time.Now())
	if cfg.protocol == "h2c" {
		log.Printf("serving gRPC (h2c) on %s (startup took %s)", ln.Addr(), time.Since(started).Round(time.Millisecond))
		return serveGRPC(ctx, cfg, ln, srv)
	}
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second}
	log.Printf("listening on %s (startup took %s)", ln.Addr(), time.Since(started).Round(time.Millisecond))
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	log.Printf("signal received: draining %d requests in flight", srv.inflight.Load())
	close(srv.stopping)
	dctx, cancel := context.WithTimeout(context.Background(), cfg.drainTimeout)
	defer cancel()
	if err := hs.Shutdown(dctx); err != nil {
		return fmt.Errorf("drain: %w", err)
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	log.Printf("stopped after serving %d requests", srv.requests.Load())
	return nil
}
