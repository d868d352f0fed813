package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// envoyProc is a plain Envoy started by startEnvoy. Envoy chose every port
// itself (admin and listeners bound to port 0), so no other process can
// take a port between choosing and binding it.
type envoyProc struct {
	*process
	adminURL string
	// ports maps each listener's name to the port Envoy bound.
	ports map[string]int
}

// startEnvoy writes bootstrap (whose admin and listeners use port 0) to
// dir/<file>.yaml, runs Envoy with e's worker count, and returns once
// admin /ready answers, with the ports Envoy bound read from admin
// /listeners; within 30 s.
func startEnvoy(e *env, dir, name, file, bootstrap string) (*envoyProc, error) {
	cfg := filepath.Join(dir, file+".yaml")
	if err := writeFile(cfg, bootstrap); err != nil {
		return nil, err
	}
	adminFile := filepath.Join(dir, file+".admin")
	_ = os.Remove(adminFile)
	p, err := startProcess(name, filepath.Join(dir, file+".log"), e.envoyBin,
		"-c", cfg, "--admin-address-path", adminFile, "--disable-hot-restart", "--log-level", "warn",
		"--concurrency", strconv.Itoa(e.envoyWorkers))
	if err != nil {
		return nil, err
	}
	ev := &envoyProc{process: p}
	fail := func(err error) (*envoyProc, error) {
		_ = p.stop(5 * time.Second)
		return nil, fmt.Errorf("%s: %w\n%s", name, err, p.logTail(20))
	}
	ctx, cancel := context.WithTimeout(e.ctx, 30*time.Second)
	defer cancel()
	addr, err := waitFile(ctx, p, adminFile)
	if err != nil {
		return fail(err)
	}
	ev.adminURL = "http://" + addr
	if err := waitHTTP(ctx, p, ev.adminURL+"/ready", 30*time.Second); err != nil {
		return fail(err)
	}
	if ev.ports, err = listenerPorts(ctx, ev.adminURL); err != nil {
		return fail(err)
	}
	return ev, nil
}

// url returns "http://127.0.0.1:<port>" of the named listener.
func (ev *envoyProc) url(listener string) string {
	return fmt.Sprintf("http://127.0.0.1:%d", ev.ports[listener])
}

// waitFile polls (every 20 ms) until path holds a line, p exits or ctx
// ends, and returns the line.
func waitFile(ctx context.Context, p *process, path string) (string, error) {
	for {
		if b, err := os.ReadFile(path); err == nil && strings.TrimSpace(string(b)) != "" {
			return strings.TrimSpace(string(b)), nil
		}
		if done, err := p.exited(); done {
			return "", fmt.Errorf("exited before writing %s: %v", path, err)
		}
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("nothing in %s: %w", path, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// listenerPorts reads admin /listeners?format=json: listener name → bound
// port.
func listenerPorts(ctx context.Context, adminURL string) (map[string]int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, adminURL+"/listeners?format=json", nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("admin /listeners: %w", err)
	}
	defer resp.Body.Close()
	var doc struct {
		ListenerStatuses []struct {
			Name         string `json:"name"`
			LocalAddress struct {
				SocketAddress struct {
					PortValue int `json:"port_value"`
				} `json:"socket_address"`
			} `json:"local_address"`
		} `json:"listener_statuses"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil {
		return nil, fmt.Errorf("admin /listeners: %w", err)
	}
	out := map[string]int{}
	for _, l := range doc.ListenerStatuses {
		if port := l.LocalAddress.SocketAddress.PortValue; port > 0 {
			out[l.Name] = port
		}
	}
	return out, nil
}
