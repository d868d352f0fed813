package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/thaw-dev/thaw/e2e/harness"
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

// startEnvoy runs Envoy with bootstrap (whose listeners use port 0) and e's
// worker count through the e2e harness (harness.LaunchEnvoy: files
// dir/<file>.*, admin on a port Envoy chose), and returns once admin
// /ready answers, with the ports Envoy bound read from admin /listeners;
// within 30 s.
func startEnvoy(e *env, dir, name, file, bootstrap string) (*envoyProc, error) {
	ctx, cancel := context.WithTimeout(e.ctx, 30*time.Second)
	defer cancel()
	he, err := harness.LaunchEnvoy(ctx, dir, harness.EnvoyOptions{Bootstrap: bootstrap, Binary: e.envoyBin, Name: file,
		LogLevel: "warn", Concurrency: e.envoyWorkers})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	ev := &envoyProc{process: &process{Process: he.Process(), name: name}, adminURL: he.AdminURL}
	if ev.ports, err = listenerPorts(ctx, ev.adminURL); err != nil {
		_ = ev.stop(5 * time.Second)
		return nil, fmt.Errorf("%s: %w\n%s", name, err, he.LogTail(20))
	}
	return ev, nil
}

// url returns "http://127.0.0.1:<port>" of the named listener.
func (ev *envoyProc) url(listener string) string {
	return fmt.Sprintf("http://127.0.0.1:%d", ev.ports[listener])
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
