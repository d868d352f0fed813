package main

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/thaw-dev/thaw/bench/results"
)

// moduleSides is the activator module's part of the paths scenario: a
// second `thaw local` whose Envoy loads the module (--activator=module,
// bin/thaw-activator.so next to the thaw binary), with two revisions of
// the same workload kept at one backend and target-burst-capacity -1 (the
// proxy side's spec): container concurrency 0 (every request pinned by
// the module, never held) and 4 (the target spec; at 16 in flight
// most requests are held for a slot).
type moduleSides struct {
	th       *thaw
	envoy    int
	cc0, cc4 *target
}

// extra revisions (the peers scenario's serve side) run in the same thaw.
func startModuleSides(e *env, maxConns int, extra ...rev) (*moduleSides, error) {
	dir, err := e.tempDir("paths-module")
	if err != nil {
		return nil, err
	}
	one := map[string]string{"min-scale": "1", "max-scale": "1", "initial-scale": "1", "target-burst-capacity": "-1"}
	cc0 := rev{name: "module", autoscaling: one}
	cc4 := rev{name: "modulecc4", autoscaling: with(one, "container-concurrency", "4")}
	th, err := startThawArgs(e.ctx, e, dir, localConfig(e.workloadBin, append([]rev{cc0, cc4}, extra...)...), "--activator=module")
	if err != nil {
		return nil, fmt.Errorf("thaw local --activator=module: %w", err)
	}
	if err := th.waitStatus(e.ctx, 30*time.Second, "1 ready", func(r revStatus) bool { return r.Ready == 1 }, cc0.name, cc4.name); err != nil {
		e.stopLogged(th.process)
		return nil, err
	}
	envoy, err := childNamed(th.Pid(), "envoy")
	if err != nil {
		e.stopLogged(th.process)
		return nil, err
	}
	return &moduleSides{th: th, envoy: envoy,
		cc0: newTarget("module", th.httpURL, cc0.host(), maxConns),
		cc4: newTarget("modulecc4", th.httpURL, cc4.host(), maxConns)}, nil
}

// newModuleResults returns the module's result sides.
func newModuleResults(p *results.Paths) {
	p.ServeWithModule = &results.Side{Name: "serve", Description: "thaw serve mode (back to back with module)"}
	p.Module = &results.Side{Name: "module", Description: "activator module (thaw local --activator=module, target-burst-capacity -1, container concurrency 0): every request pinned in Envoy, warm backend"}
	p.ModuleCC4 = &results.Side{Name: "modulecc4", Description: "activator module, container concurrency 4 (closed loop only: most requests held for a slot)"}
}

// check confirms the module sides went through the module: the module
// thaw's ext_proc answered nothing.
func (m *moduleSides) check(ctx context.Context) error {
	c := &http.Client{Timeout: 5 * time.Second}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, m.th.adminURL+"/metrics", nil)
	if err != nil {
		return err
	}
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "thaw_extproc_responses_total{") {
			continue
		}
		if v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64); err == nil && v > 0 {
			return fmt.Errorf("module sides: the module thaw's ext_proc answered requests (%s): not the module path", line)
		}
	}
	return sc.Err()
}
