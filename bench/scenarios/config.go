package main

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/thaw-dev/thaw/e2e/harness"
)

// rev is one revision of the local platform file, running the example
// workload.
type rev struct {
	name         string
	startupDelay time.Duration
	latency      time.Duration
	autoscaling  map[string]string
}

func (r rev) host() string { return r.name + ".bench" }

// localConfig renders the `thaw local` YAML for revs.
func localConfig(workloadBin string, revs ...rev) string {
	var b strings.Builder
	b.WriteString("revisions:\n")
	for _, r := range revs {
		fmt.Fprintf(&b, "  - name: %s\n    hosts: [%s]\n    command: [%q, --port, \"{port}\"]\n", r.name, r.host(), workloadBin)
		fmt.Fprintf(&b, "    env:\n      BODY: hello from %s\n      STARTUP_DELAY: %s\n      LATENCY: %s\n", r.name, r.startupDelay, r.latency)
		b.WriteString("    readiness:\n      path: /healthz\n      period: 1s\n    stopTimeout: 5s\n")
		writeAutoscaling(&b, r.autoscaling)
	}
	return b.String()
}

// staticEnvoyBootstrap is the baseline: a plain Envoy whose only listener
// routes every request to one backend, with the same circuit-breaker
// limits thaw's clusters get. No xDS, no ext_proc, no stats sink.
func staticEnvoyBootstrap(backendPort int) string {
	return staticBootstrap("static_http", backendPort, false)
}

// staticBootstrap is a plain Envoy bootstrap: listener name routing
// everything to one backend cluster (HTTP/1.1, or h2c when h2c) with the
// circuit-breaker limits thaw's clusters get; Envoy picks the listener's
// and admin's ports (startEnvoy reads them).
func staticBootstrap(name string, backendPort int, h2c bool) string {
	cluster := harness.StaticCluster("backend", backendPort)
	if h2c {
		cluster = harness.GRPCCluster("backend", backendPort)
	}
	return harness.StaticBootstrap{
		Listeners: []harness.HTTPListener{{Name: name, RouteConfigName: "static",
			VirtualHosts: []string{harness.CatchAll("backend", "{cluster: backend}")}}},
		Clusters: []string{cluster + "\n" + benchCircuitBreakers},
		Tail:     adminAnyPort,
	}.String()
}

// benchCircuitBreakers lifts a cluster's circuit-breaker limits to those
// of thaw's clusters (a YAML mapping's key, for harness.StaticBootstrap).
const benchCircuitBreakers = `circuit_breakers:
  thresholds:
  - {max_connections: 100000, max_pending_requests: 100000, max_requests: 100000}`

// adminAnyPort is the admin of a bench Envoy, on a port Envoy chooses.
const adminAnyPort = "admin:\n  address: {socket_address: {address: 127.0.0.1, port_value: 0}}\n"

// staticEnvoy is the running baseline Envoy.
type staticEnvoy struct {
	*process
	httpURL string
}

// startStaticEnvoy runs the baseline Envoy with the same worker count as
// thaw's and waits for its admin /ready.
func startStaticEnvoy(e *env, dir string, backendPort int) (*staticEnvoy, error) {
	ev, err := startEnvoy(e, dir, "static envoy", "static-envoy", staticEnvoyBootstrap(backendPort))
	if err != nil {
		return nil, err
	}
	return &staticEnvoy{process: ev.process, httpURL: ev.url("static_http")}, nil
}

// writeAutoscaling appends a revision's autoscaling map to a local config,
// keys sorted; nothing when it is empty.
func writeAutoscaling(b *strings.Builder, settings map[string]string) {
	if len(settings) == 0 {
		return
	}
	b.WriteString("    autoscaling:\n")
	keys := make([]string, 0, len(settings))
	for k := range settings {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(b, "      %s: %q\n", k, settings[k])
	}
}

// revJSON is one revision of the local platform file in its JSON form.
type revJSON struct {
	Name        string            `json:"name"`
	Hosts       []string          `json:"hosts"`
	Command     []string          `json:"command"`
	Env         map[string]string `json:"env,omitempty"`
	Readiness   map[string]string `json:"readiness,omitempty"`
	StopTimeout string            `json:"stopTimeout,omitempty"`
	Autoscaling map[string]string `json:"autoscaling,omitempty"`
}

// largeConfigJSON is largeConfig written as JSON, one revision a line, as
// a program generating a file of this size would write it (thaw reads it
// on its JSON fast path).
func largeConfigJSON(workloadBin string, n int, extra []rev) (string, error) {
	var b strings.Builder
	b.Grow(n * 160)
	b.WriteString("{\"revisions\": [\n")
	idle := map[string]string{"initial-scale": "0"}
	write := func(r revJSON, last bool) error {
		line, err := json.Marshal(r)
		if err != nil {
			return err
		}
		b.WriteString("  ")
		b.Write(line)
		if !last {
			b.WriteByte(',')
		}
		b.WriteByte('\n')
		return nil
	}
	for i := range n {
		name := fmt.Sprintf("s%06d", i)
		r := revJSON{Name: name, Hosts: []string{name + ".bench"}, Command: []string{workloadBin, "--port", "{port}"}, Autoscaling: idle}
		if err := write(r, i == n-1 && len(extra) == 0); err != nil {
			return "", err
		}
	}
	for i, r := range extra {
		j := revJSON{Name: r.name, Hosts: []string{r.host()}, Command: []string{workloadBin, "--port", "{port}"},
			Env:       map[string]string{"BODY": "hello from " + r.name, "STARTUP_DELAY": r.startupDelay.String(), "LATENCY": r.latency.String()},
			Readiness: map[string]string{"path": "/healthz", "period": "1s"}, StopTimeout: "5s", Autoscaling: r.autoscaling}
		if err := write(j, i == len(extra)-1); err != nil {
			return "", err
		}
	}
	b.WriteString("]}\n")
	return b.String(), nil
}
