package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/thaw-dev/thaw/bench/peers"
)

// startInterceptor runs the interceptor in a mount namespace of its own
// whose /etc/hosts (a bind-mounted file in dir) maps the backend's service
// name to 127.0.0.1; nothing outside that process sees the file.
// It returns the process and the command line and environment it ran
// with, for the report.
func startInterceptor(e *env, dir, bin string, proxyPort, adminPort int, kubeconfig string) (p *process, cmd string, env []string, err error) {
	hosts := filepath.Join(dir, "keda-hosts")
	if err := writeFile(hosts, fmt.Sprintf("127.0.0.1 localhost\n127.0.0.1 %s.%s\n", peers.KedaService, peers.KedaNamespace)); err != nil {
		return nil, "", nil, err
	}
	env = peers.KedaEnv(proxyPort, adminPort, kubeconfig)
	args := []string{"--mount", "--", "sh", "-c", `mount --bind "$0" /etc/hosts && exec "$@"`, hosts, bin}
	p, err = startProcessEnv("keda interceptor", filepath.Join(dir, "keda-interceptor.log"), env, "unshare", args...)
	if err != nil {
		return nil, "", nil, err
	}
	ctx, cancel := context.WithTimeout(e.ctx, 60*time.Second)
	defer cancel()
	if err := waitHTTP(ctx, p, fmt.Sprintf("http://127.0.0.1:%d/readyz", adminPort), 60*time.Second); err != nil {
		_ = p.stop(5 * time.Second)
		return nil, "", nil, fmt.Errorf("keda interceptor: %w\n%s", err, p.logTail(20))
	}
	return p, "unshare " + strings.Join(args, " "), env, nil
}
