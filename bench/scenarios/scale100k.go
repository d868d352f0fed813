package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/thaw-dev/thaw/bench/results"
	"github.com/thaw-dev/thaw/e2e/harness"
	"github.com/thaw-dev/thaw/xds"
)

// Shape of scenario scale100k.
const (
	large100kActive = 3  // revisions with a backend under light load
	large100kRPS    = 30 // requests/s over all of them
	large100kTick   = 2 * time.Second
	// large100kAckLimit is thaw's default --xds-ack-timeout: since an
	// answering stream is not stalled, the default holds at 100k.
	large100kAckLimit = xds.DefaultAckTimeout
	// large100kPerRev is memory to have available per revision before
	// starting: Envoy ~48 KiB and thaw ~16 KiB (peak) measured at 100k.
	large100kPerRev = 64 << 10
	// loopPrefix names the decision loops' functions in a CPU profile.
	loopPrefix = "github.com/thaw-dev/thaw/autoscaler.(*loopShard)."
)

// runScale100k starts the real `thaw local` with n idle revisions (initial
// scale 0: no process), large100kActive active ones (min-scale 1, a real
// backend each, light load through Envoy all along) and a few that are
// woken one after the other and left to go back to zero, to cause mode
// flips. It measures start to every Envoy ACK, thaw's and Envoy's memory,
// the decision loops' CPU per tick (a CPU profile of the running binary),
// and the bytes and flip-to-ACK of the flips. Every wait is bounded; a
// bound reached is an error naming it, returned with the figures measured
// until then.
func runScale100k(e *env, n int) (*results.ScaleLarge, error) {
	if err := haveMemory(int64(n)*large100kPerRev + 1<<30); err != nil {
		return nil, err
	}
	dir, err := e.tempDir("scale100k")
	if err != nil {
		return nil, err
	}
	active := make([]rev, large100kActive)
	for i := range active {
		active[i] = rev{name: fmt.Sprintf("active%d", i), autoscaling: map[string]string{
			"min-scale": "1", "target-burst-capacity": "0"}}
	}
	// Each woken by one request. The activator is in the path only at
	// zero, so waking flips to serve; idle for one window (long enough for
	// all to be woken first), each goes back to proxy mode and to zero at
	// once (no grace period).
	nflip := e.size(5, 2)
	if e.largeWakes > 0 {
		nflip = e.largeWakes
	}
	flippers := make([]rev, nflip)
	for i := range flippers {
		flippers[i] = rev{name: fmt.Sprintf("flipper%d", i), autoscaling: map[string]string{"initial-scale": "0",
			"window": "30s", "scale-to-zero-grace-period": "0s", "target-burst-capacity": "0"}}
	}
	var cfg string
	switch extra := append(append([]rev{}, active...), flippers...); e.largeFormat {
	case "yaml":
		cfg = largeConfig(e.workloadBin, n, extra)
	case "json", "":
		if cfg, err = largeConfigJSON(e.workloadBin, n, extra); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("-scale100k-config %q: want json or yaml", e.largeFormat)
	}
	readyBound := time.Duration(n/1000)*6*time.Second + time.Minute // ~10 min at 100k
	res := &results.ScaleLarge{Active: len(active), ActiveRPS: large100kRPS,
		AckTimeoutSeconds: large100kAckLimit.Seconds(), TickSeconds: large100kTick.Seconds()}
	res.Revisions = n
	e.logf("scale100k: starting thaw with %d idle revisions (ready within %s)", n, readyBound)
	start := time.Now()
	th, err := startThawWait(e.ctx, e, dir, cfg, readyBound,
		"--tick", large100kTick.String())
	if err != nil {
		return nil, fmt.Errorf("thaw with %d revisions: %w", n, err)
	}
	defer stopLarge(e, th, dir)
	res.ReadySeconds = time.Since(start).Seconds()
	err = measureLarge(e, th, dir, active, flippers, res)
	return res, err
}

// measureLarge measures a ready scale100k thaw into res.
func measureLarge(e *env, th *thaw, dir string, active, flippers []rev, res *results.ScaleLarge) error {
	pid := th.Pid()
	epid, err := envoyPid(dir)
	if err != nil {
		return err
	}
	if cpu, err := harness.CPUTime(epid); err == nil {
		res.EnvoySyncCPUSeconds = cpu.Seconds()
	}
	if cpu, err := harness.CPUTime(pid); err == nil {
		res.ThawSyncCPUSeconds = cpu.Seconds()
	}
	e.logf("scale100k: ready in %.1f s (Envoy's CPU %.1f s, thaw's %.1f s)", res.ReadySeconds, res.EnvoySyncCPUSeconds, res.ThawSyncCPUSeconds)
	if e.largeStartOnly {
		err := largeMemory(th, pid, epid, &res.Scale)
		e.logf("scale100k: start only: thaw RSS %.0f MiB (peak %.0f), Envoy RSS %.0f MiB", res.ThawRSSMiB, res.ThawPeakRSSMiB, res.EnvoyRSSMiB)
		return err
	}

	names := make([]string, len(active))
	for i, r := range active {
		names[i] = r.name
	}
	if err := th.waitRows(e.ctx, 2*time.Minute, "active revisions serving", func(r revStatus) bool {
		return r.Mode == "serve" && r.Ready >= 1
	}, names...); err != nil {
		return err
	}
	load := startLightLoad(th.httpURL, active, large100kRPS)
	defer load.stop()

	res.SettleSeconds = 20
	if e.quick {
		res.SettleSeconds = 5
	}
	if err := sleepCtx(e.ctx, time.Duration(res.SettleSeconds*float64(time.Second))); err != nil {
		return err
	}
	if err := largeMemory(th, pid, epid, &res.Scale); err != nil {
		return err
	}
	if err := liveHeap(th, e.largeHeapProfile, &res.Scale); err != nil {
		return err
	}
	e.logf("scale100k: thaw RSS %.0f MiB (peak %.0f, heap %.0f, live heap after GC %.0f), Envoy RSS %.0f MiB",
		res.ThawRSSMiB, res.ThawPeakRSSMiB, res.HeapInuseMiB, res.HeapLiveMiB, res.EnvoyRSSMiB)

	if err := measureTicks(e, th, pid, epid, res); err != nil {
		return err
	}
	e.logf("scale100k: decision loops %.0f ms CPU per %s tick (whole process %.0f ms; %.0f decisions per tick); Envoy %.2f cores",
		res.LoopCPUPerTickMs, large100kTick, res.ProcessCPUPerTickMs, res.DecisionsPerTick, res.EnvoyCPUCores)

	flipErr := measureFlips(e, th, flippers, res)
	e.logf("scale100k: activator %q; waking flip-to-ACK %s; back to zero flip-to-ACK %s", res.Activator, flipLine(res.Waking), flipLine(res.BackToZero))
	e.logf("scale100k: %d woken, %d back at zero: %.0f endpoints responses, %.0f B each; other types %.0f B; flip-to-ACK p50 %.1f ms p99 %.1f ms (%.0f changes; waking p50 %.1f p99 %.1f ms, back to zero p99 %.1f ms, all of its changes); cluster removals ACKed p50 %.1f p99 %.1f ms (%.0f); clusters added ahead of a first backend ACKed p99 %.1f ms (%.0f); cold-start overhead of the wakes p50 %.1f ms p99 %.1f ms",
		res.FlipCycles, res.BackAtZero, res.EndpointPushes, res.BytesPerPush(), res.OtherBytes, res.FlipToAckP50Ms, res.FlipToAckP99Ms, res.FlipToAckCount,
		res.WakeToAckP50Ms, res.WakeToAckP99Ms, res.SleepToAckP99Ms, res.RemovalToAckP50Ms, res.RemovalToAckP99Ms, res.RemovalToAckCount,
		res.WakeClusterToAckP99Ms, res.WakeClusterToAckCount, res.WakeOverheadP50Ms, res.WakeOverheadP99Ms)
	e.logf("scale100k: during the flips %.0f make-before-break stages and %.0f removal-first splits went on by the stage timeout, not by every ACK",
		res.StageTimeouts, res.RemovalFirstTimeouts)
	res.LoadRequests, res.LoadErrors = load.stop()
	var loadErr error
	if res.LoadErrors > 0 {
		loadErr = fmt.Errorf("light load: %d of %d requests failed (%s)", res.LoadErrors, res.LoadRequests, load.firstError())
	}
	return errors.Join(flipErr, loadErr)
}

// stopLarge stops thaw, then its Envoy if it outlived thaw. At 100k
// thaw's shutdown (Envoy's listener drain, whose admin call waits behind
// Envoy's busy main thread) can take longer than other scenarios allow,
// and when thaw is killed its Envoy, in a process group of its own, is
// left running.
func stopLarge(e *env, th *thaw, dir string) {
	epid, perr := envoyPid(dir)
	if err := th.stop(2 * time.Minute); err != nil {
		e.logf("%s: %v\n%s", th.name, err, th.logTail(20))
	}
	if perr != nil {
		return
	}
	comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", epid))
	if err != nil || strings.TrimSpace(string(comm)) != "envoy" {
		return // gone (or the pid was reused)
	}
	e.logf("scale100k: thaw's Envoy (pid %d) outlived thaw; stopping it", epid)
	_ = syscall.Kill(epid, syscall.SIGTERM)
	for range 100 {
		if err := syscall.Kill(epid, 0); err != nil {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	_ = syscall.Kill(epid, syscall.SIGKILL)
}

// largeConfig renders n idle revisions, one flow-style line each (a
// 100k-revision file in block style is ~40 MB), then extra in block style.
func largeConfig(workloadBin string, n int, extra []rev) string {
	var b strings.Builder
	b.Grow(n * 140)
	b.WriteString("revisions:\n")
	for i := range n {
		fmt.Fprintf(&b, "  - {name: s%06d, hosts: [s%06d.bench], command: [%q, --port, \"{port}\"], autoscaling: {initial-scale: \"0\"}}\n",
			i, i, workloadBin)
	}
	b.WriteString(strings.TrimPrefix(localConfig(workloadBin, extra...), "revisions:\n"))
	return b.String()
}

// measureTicks profiles thaw's CPU while the revisions tick: the decision
// loops' share of the profile, the process's CPU from /proc over the same
// time, and the decisions counted.
func measureTicks(e *env, th *thaw, pid, epid int, res *results.ScaleLarge) error {
	secs := e.size(20, 10)
	// A scrape takes seconds at 100k: the decision counter is read at its
	// midpoint, so the counted window runs from one midpoint to the other.
	b0 := time.Now()
	before, err := scrape(th.adminURL + "/metrics")
	beforeAt := b0.Add(time.Since(b0) / 2)
	if err != nil {
		return err
	}
	cpu0, err := harness.CPUTime(pid)
	if err != nil {
		return err
	}
	ecpu0, err := harness.CPUTime(epid)
	if err != nil {
		return err
	}
	t0 := time.Now()
	ctx, cancel := context.WithTimeout(e.ctx, time.Duration(secs+60)*time.Second)
	defer cancel()
	prof, err := fetchBody(ctx, fmt.Sprintf("%s/debug/pprof/profile?seconds=%d", th.adminURL, secs))
	if err != nil {
		return fmt.Errorf("cpu profile: %w", err)
	}
	elapsed := time.Since(t0)
	cpu1, err := harness.CPUTime(pid)
	if err != nil {
		return err
	}
	ecpu1, err := harness.CPUTime(epid)
	if err != nil {
		return err
	}
	res.EnvoyCPUCores = (ecpu1 - ecpu0).Seconds() / elapsed.Seconds()
	a0 := time.Now()
	after, err := scrape(th.adminURL + "/metrics")
	afterAt := a0.Add(time.Since(a0) / 2)
	if err != nil {
		return err
	}
	share, err := cpuProfileShare(prof, loopPrefix)
	if err != nil {
		return err
	}
	ticks := float64(secs) / large100kTick.Seconds()
	res.ProfileSeconds = float64(secs)
	res.LoopCPUPerTickMs = results.Millis(share.Matched) / ticks
	res.ProcessCPUPerTickMs = results.Millis(cpu1-cpu0) / (elapsed.Seconds() / large100kTick.Seconds())
	res.DecisionsPerTick = (after["thaw_autoscaler_decisions_total"] - before["thaw_autoscaler_decisions_total"]) /
		(afterAt.Sub(beforeAt).Seconds() / large100kTick.Seconds())
	// Idle revisions are dormant (out of the loops): with only the few
	// awake ones deciding, a profile may hold no loop sample at all. Many
	// decisions and none sampled means the loop was renamed.
	if share.Matched == 0 && res.DecisionsPerTick >= 1000 {
		return fmt.Errorf("cpu profile of %d s has no sample in %s* (%s in all): the decision loop was renamed?", secs, loopPrefix, share.Total)
	}
	return nil
}

// measureFlips wakes each of flippers with one request and waits for it
// to serve, then waits for all to be back in proxy mode at zero, and takes
// the xDS figures of the whole from thaw's metrics (in res even when a
// wait failed).
func measureFlips(e *env, th *thaw, flippers []rev, res *results.ScaleLarge) error {
	c := &http.Client{Timeout: 30 * time.Second}
	t0 := time.Now()
	if _, err := th.status(e.ctx, c); err != nil {
		return fmt.Errorf("/status: %w", err)
	}
	res.StatusSeconds = time.Since(t0).Seconds()
	t0 = time.Now()
	before, err := scrape(th.adminURL + "/metrics")
	if err != nil {
		return err
	}
	res.MetricsSeconds = time.Since(t0).Seconds()
	// The histogram's changes per phase: waking (each backend joins its
	// proxy-mode assignment, then the flip to serve) and going back to
	// zero (the flip to proxy, then the backend leaves).
	const hist = "thaw_xds_flip_to_ack_seconds"
	const removals = "thaw_xds_removal_to_ack_seconds"
	const ahead = "thaw_xds_wake_cluster_to_ack_seconds"
	wake, sleep := map[string]float64{}, map[string]float64{}
	mark := before
	phase := func(into map[string]float64) error {
		now, err := scrape(th.adminURL + "/metrics")
		if err != nil {
			return err
		}
		for k, v := range now {
			if strings.HasPrefix(k, hist) || strings.HasPrefix(k, removals) || strings.HasPrefix(k, ahead) {
				into[k] += v - mark[k]
			}
		}
		mark = now
		return nil
	}
	var overhead []float64
	waitErr := func() error {
		for _, r := range flippers {
			sent := time.Now()
			s, err := coldAt(e.ctx, c, th.httpURL, r)
			if err != nil {
				return fmt.Errorf("waking %s: %w", r.name, err)
			}
			overhead = append(overhead, s.OverheadMs)
			// One line per wake, with the request's send time, so that
			// the wake's stages can be matched against thaw's and
			// Envoy's logs (docs/scaling.md, the cold start at 100,000).
			e.logf("scale100k: wake %s: sent at %.6f s (Unix); backend started %.2f ms later, listening %.2f ms after its start; response end %.2f ms after listening (overhead), %.2f ms after the send",
				r.name, float64(sent.UnixNano())/1e9, s.SpawnMs, s.StartupMs, s.OverheadMs, s.TotalMs)
			if err := th.waitRows(e.ctx, time.Minute, r.name+" in serve mode", func(s revStatus) bool {
				return s.Mode == "serve"
			}, r.name); err != nil {
				return err
			}
			res.FlipCycles++
		}
		// The last flip's ACK may follow its mode by a little.
		if err := sleepCtx(e.ctx, time.Second); err != nil {
			return err
		}
		if err := phase(wake); err != nil {
			return err
		}
		names := make([]string, len(flippers))
		for i, r := range flippers {
			names[i] = r.name
		}
		err := th.waitRows(e.ctx, 3*time.Minute, "every flipper back at zero in proxy mode", func(s revStatus) bool {
			return s.Mode == "proxy" && s.Desired == 0 && s.Ready == 0
		}, names...)
		if rows, serr := th.statusOf(e.ctx, c, names...); serr == nil {
			for _, r := range flippers {
				if s := rows["local/"+r.name]; s.Mode == "proxy" && s.Desired == 0 && s.Ready == 0 {
					res.BackAtZero++
				}
			}
		}
		return err
	}()
	// The last change (a backend leaving its proxy-mode assignment) may
	// still be waiting for its ACK.
	if err := sleepCtx(e.ctx, 2*time.Second); err != nil {
		return err
	}
	if err := phase(sleep); err != nil {
		return errors.Join(waitErr, err)
	}
	res.WakeOverheadP50Ms = results.Quantile(overhead, 0.5)
	res.WakeOverheadP99Ms = results.Quantile(overhead, 0.99)
	after := mark
	d := func(k string) float64 { return after[k] - before[k] }
	res.EndpointPushes = d(`thaw_xds_pushes_total{type="endpoints"}`)
	res.EndpointBytes = d(`thaw_xds_pushed_bytes_total{type="endpoints"}`)
	for k := range after {
		if strings.HasPrefix(k, "thaw_xds_pushed_bytes_total{") && k != `thaw_xds_pushed_bytes_total{type="endpoints"}` {
			res.OtherBytes += d(k)
		}
	}
	res.FlipToAckCount = d(hist + "_count")
	p50, _ := histQuantile(before, after, hist, 0.5)
	p99, _ := histQuantile(before, after, hist, 0.99)
	res.FlipToAckP50Ms, res.FlipToAckP99Ms = p50*1000, p99*1000
	w50, _ := histQuantile(nil, wake, hist, 0.5)
	w99, _ := histQuantile(nil, wake, hist, 0.99)
	res.WakeToAckP50Ms, res.WakeToAckP99Ms = w50*1000, w99*1000
	// Per phase, whichever activator ran: a wake's flip is its backend's
	// change (on the module's cluster routes the cluster sent ahead while
	// the backend starts is timed apart, in wake_cluster_to_ack_seconds;
	// a flip that waited for it includes the wait); a return to zero is
	// its flip to proxy mode, or on the module's cluster routes its
	// cluster's removal, which only removal_to_ack_seconds times.
	res.Activator = activatorOf(before)
	res.Waking = flipFigures(nil, wake, hist)
	res.BackToZero = flipFigures(nil, sleep, hist, removals)
	if res.BackToZero != nil {
		res.SleepToAckP99Ms = res.BackToZero.P99Ms
	}
	res.RemovalToAckCount = d(removals + "_count")
	r50, _ := histQuantile(before, after, removals, 0.5)
	r99, _ := histQuantile(before, after, removals, 0.99)
	res.RemovalToAckP50Ms, res.RemovalToAckP99Ms = r50*1000, r99*1000
	res.WakeClusterToAckCount = d(ahead + "_count")
	a99, _ := histQuantile(before, after, ahead, 0.99)
	res.WakeClusterToAckP99Ms = a99 * 1000
	res.StageTimeouts = d("thaw_xds_stage_timeouts_total")
	res.RemovalFirstTimeouts = d(`thaw_xds_removal_first_total{outcome="timeout"}`) + d(`thaw_xds_removal_first_total{outcome="module_timeout"}`)
	if waitErr == nil && res.FlipToAckCount == 0 {
		waitErr = fmt.Errorf("%s: no change was ACKed during the flips", hist)
	}
	return waitErr
}
