package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/thaw-dev/thaw/bench/peers"
)

// startQueueProxy runs queue-proxy in front of the backend on userPort and
// waits (within 60 s) until a request through it answers 200. Its admin
// and metrics servers take Knative's fixed ports (8022, 9091): the peers
// scenario runs in a network namespace of its own.
func startQueueProxy(e *env, dir, bin string, servingPort, tlsPort, userPort int) (p *process, env []string, err error) {
	env = peers.QueueEnv(servingPort, tlsPort, userPort)
	p, err = startProcessEnv("queue-proxy", filepath.Join(dir, "queue-proxy.log"), env, bin)
	if err != nil {
		return nil, nil, err
	}
	ctx, cancel := context.WithTimeout(e.ctx, 60*time.Second)
	defer cancel()
	if err := waitHTTP(ctx, p, fmt.Sprintf("http://127.0.0.1:%d/healthz", servingPort), 60*time.Second); err != nil {
		_ = p.stop(5 * time.Second)
		return nil, nil, fmt.Errorf("queue-proxy: %w\n%s", err, p.logTail(20))
	}
	return p, env, nil
}

// envLines renders env as one KEY=value per line.
func envLines(env []string) string { return strings.Join(env, "\n") }
