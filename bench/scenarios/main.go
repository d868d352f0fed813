package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/thaw-dev/thaw/bench/peers"
	"github.com/thaw-dev/thaw/bench/results"
)

// env is what every scenario needs.
type env struct {
	ctx         context.Context
	thawBin     string
	envoyBin    string
	workloadBin string
	// egBin is envoy-gateway (make tools-envoy-gateway), for scenario eg.
	egBin        string
	envoyWorkers int
	// knobSides, when set, limits scenario knobs to these sides
	// (comma-separated; the baseline static always runs).
	knobSides string
	rate      int
	// burstRuns is how many times burst10k repeats at each container
	// concurrency.
	burstRuns int
	// envoyFiles is thaw local's --envoy-open-files for the bursts (0:
	// thaw's default, the hard limit).
	envoyFiles int
	quick      bool
	// largeN, when > 0, is scenario scale100k's idle revision count
	// (-scale100k-revisions), for comparing one shape at another size.
	largeN int
	// largeWakes, when > 0, is how many revisions scenario scale100k
	// wakes and lets go back to zero (-scale100k-wakes; default 5, -quick
	// 2): more give a p99 of the wake and the return worth reading.
	largeWakes int
	// largeHeapProfile, when set, is where scenario scale100k writes
	// thaw's heap profile, taken after a forced collection.
	largeHeapProfile string
	// largeFormat is how scenario scale100k writes its config file
	// (-scale100k-config): "json" (default; what a generated file of
	// this size would be, read on thaw's JSON fast path) or "yaml".
	largeFormat string
	// largeStartOnly makes scenario scale100k stop after thaw's start
	// (ready time, CPU, peak memory): -scale100k-start-only.
	largeStartOnly bool
	// thawArgs are appended to every `thaw local` (-thaw-args), e.g.
	// --idle-hold-path to measure the idle hold path.
	thawArgs []string
	workDir  string
	keep     bool
	// root is the repository (the working directory).
	root string
}

// redact makes s fit for the report: the work directory becomes $WORK and
// the repository ".", so no path of this machine is published.
func (e *env) redact(s string) string {
	if e.workDir != "" {
		s = strings.ReplaceAll(s, e.workDir, "$WORK")
	}
	if e.root != "" {
		s = strings.ReplaceAll(s, e.root+string(filepath.Separator), "./")
	}
	return s
}

// size returns full, or quick for a shortened run (-quick).
func (e *env) size(full, quick int) int {
	if e.quick {
		return quick
	}
	return full
}

func (e *env) logf(format string, args ...any) { log.Printf(format, args...) }

// tempDir makes a directory for one scenario's files (configs, logs, the
// state of `thaw local`).
func (e *env) tempDir(name string) (string, error) {
	d := filepath.Join(e.workDir, name)
	if err := os.MkdirAll(d, 0o755); err != nil {
		return "", fmt.Errorf("scenario dir: %w", err)
	}
	return d, nil
}

// stopLogged stops p and logs a failure to stop cleanly.
func (e *env) stopLogged(p *process) {
	if err := p.stop(30 * time.Second); err != nil {
		e.logf("%s: %v\n%s", p.name, err, p.logTail(20))
	}
}

func writeFile(path, s string) error { return os.WriteFile(path, []byte(s), 0o600) }

func main() {
	log.SetFlags(log.Ltime | log.Lmicroseconds)
	log.SetPrefix("scenarios: ")
	root, _ := os.Getwd()
	envoyDefault := os.Getenv("ENVOY_BIN")
	if envoyDefault == "" {
		envoyDefault = filepath.Join(root, ".tools", "bin", "envoy")
	}
	e := &env{root: root}
	out := flag.String("out", "bench/out/scenarios.json", "where to write the figures (JSON)")
	png := flag.String("png", "docs/burst.png", "where to write the burst timeline picture (PNG; empty: none)")
	only := flag.String("only", "paths,cold,burst,burst10k,failover,scale,protocols,abuse,eg,egsplit", "scenarios to run, comma-separated")
	flag.StringVar(&e.thawBin, "thaw", filepath.Join(root, "bin", "thaw"), "thaw binary (make build)")
	flag.StringVar(&e.envoyBin, "envoy", envoyDefault, "Envoy binary ($ENVOY_BIN, make tools)")
	flag.StringVar(&e.workloadBin, "workload", filepath.Join(root, "bin", "workload"), "example workload binary (make build)")
	flag.StringVar(&e.egBin, "envoy-gateway", filepath.Join(root, ".tools", "bin", "envoy-gateway"), "envoy-gateway binary (make tools-envoy-gateway), for scenario eg")
	flag.IntVar(&e.envoyWorkers, "envoy-concurrency", 2, "worker threads of both Envoys")
	flag.StringVar(&e.knobSides, "knobs-sides", "", "scenario knobs: only these sides against static (comma-separated, e.g. thaw,lean,serve)")
	flag.IntVar(&e.rate, "rate", 1000, "requests per second of the constant-rate runs")
	flag.IntVar(&e.burstRuns, "burst-runs", burstLargeRuns, "burst10k: runs at each container concurrency (0 and 50)")
	flag.DurationVar(&burstLargeStartup, "burst-startup", burstLargeStartup, "burst10k: how long the backends take to start")
	flag.IntVar(&e.envoyFiles, "envoy-open-files", 0, "burst and burst10k: Envoy's open-file limit (thaw local --envoy-open-files; 0: thaw's default, the hard limit)")
	coldActs := flag.String("cold-activators", "extproc", "cold: activators to measure, back to back in this order (extproc, module; comma-separated)")
	ccs := flag.String("burst-ccs", "0,50", "burst10k: container concurrencies to run at, comma-separated")
	flag.IntVar(&e.largeN, "scale100k-revisions", 0, "scale100k: idle revisions (0: 100,000, -quick 20,000)")
	flag.IntVar(&e.largeWakes, "scale100k-wakes", 0, "scale100k: revisions woken one after the other and left to go back to zero (0: 5, -quick 2)")
	flag.StringVar(&e.largeHeapProfile, "scale100k-heap-profile", "", "scale100k: write thaw's heap profile (after a forced GC) to this file")
	flag.StringVar(&e.largeFormat, "scale100k-config", "json", "scale100k: the config file's format, json (read on thaw's JSON fast path) or yaml (one flow-style line per revision)")
	flag.BoolVar(&e.largeStartOnly, "scale100k-start-only", false, "scale100k: measure thaw's start only (ready time, CPU to ready, peak RSS), then stop")
	thawArgs := flag.String("thaw-args", "", "extra flags for every `thaw local`, space-separated (e.g. --idle-hold-path)")
	flag.BoolVar(&e.quick, "quick", false, "short runs (development; figures are not comparable)")
	flag.BoolVar(&e.keep, "keep", false, "keep the work directory (configs, thaw and Envoy logs)")
	var pc peersConfig
	flag.StringVar(&pc.kedaBin, "keda", filepath.Join(root, ".tools", "bin", "keda-interceptor"), "KEDA HTTP add-on interceptor binary (make tools-peers)")
	flag.StringVar(&pc.queueBin, "queue-proxy", filepath.Join(root, ".tools", "bin", "queue-proxy"), "Knative queue-proxy binary (make tools-peers)")
	flag.BoolVar(&pc.smoke, "smoke", false, "peers: one request through each side, no measurement")
	replot := flag.String("replot", "", "only redraw -png from the burst figures of this JSON file, run nothing")
	timeout := flag.Duration("timeout", 12*time.Minute, "give up after this long")
	flag.Parse()
	e.thawArgs = strings.Fields(*thawArgs)
	if *replot != "" {
		res, err := results.ReadScenarios(*replot)
		if err == nil && res.Burst == nil {
			err = errors.New(*replot + ": no burst figures")
		}
		if err == nil {
			err = plotBurst(res.Burst, *png)
		}
		if err != nil {
			log.Fatal(err)
		}
		return
	}
	parsed, err := parseCCs(*ccs)
	if err != nil {
		log.Fatalf("-burst-ccs: %v", err)
	}
	burstCCs = parsed
	if coldActivators, err = parseActivators(*coldActs); err != nil {
		log.Fatalf("-cold-activators: %v", err)
	}
	peersOnly := strings.TrimSpace(*only) == "peers"
	if !peersOnly && strings.Contains(*only, "peers") {
		log.Fatal("-only peers runs alone (it needs a network namespace of its own)")
	}
	if peersOnly && !peers.InNetns() {
		if err := peers.ReexecInNetns(); err != nil {
			log.Printf("FAILED: %v", err)
			os.Exit(1)
		}
		return
	}
	for _, p := range []*string{&e.thawBin, &e.envoyBin, &e.workloadBin} {
		abs, err := filepath.Abs(*p)
		if err != nil {
			log.Fatal(err)
		}
		if _, err := os.Stat(abs); err != nil {
			log.Fatalf("%s not found: run `make tools build` (%v)", abs, err)
		}
		*p = abs
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	e.ctx = ctx
	dir, err := os.MkdirTemp("", "thaw-bench-")
	if err != nil {
		log.Fatal(err)
	}
	e.workDir = dir
	run := func() error { return run(e, *only, *out, *png) }
	if peersOnly {
		run = func() error { return runPeersMain(e, pc, *out) }
	}
	if err := run(); err != nil {
		log.Printf("FAILED: %v (work directory kept: %s)", err, dir)
		os.Exit(1)
	}
	if !e.keep {
		_ = os.RemoveAll(dir)
	} else {
		log.Printf("work directory: %s", dir)
	}
}

func run(e *env, only, out, png string) error {
	want := map[string]bool{}
	for _, s := range strings.Split(only, ",") {
		want[strings.TrimSpace(s)] = true
	}
	res := &results.Scenarios{Started: time.Now(), Quick: e.quick, Load1Start: load1()}
	var failed []error
	note := func(name string, err error) {
		if err != nil {
			e.logf("%s: %v", name, err)
			res.Errors = append(res.Errors, fmt.Sprintf("%s: %v", name, err))
			failed = append(failed, fmt.Errorf("%s: %w", name, err))
		}
	}
	if want["paths"] {
		p, err := runPaths(e)
		res.Paths = p
		note("paths", err)
	}
	if want["cold"] {
		for _, act := range coldActivators {
			if act == "module" {
				c, err := runCold(e, []time.Duration{0, time.Second}, "cold-module", "--activator=module")
				res.ColdModule = c
				note("cold (module)", err)
				continue
			}
			c, err := runCold(e, []time.Duration{0, time.Second}, "cold")
			res.Cold = c
			note("cold", err)
		}
	}
	if want["burst"] {
		b, err := runBurst(e, 1000, burstRevAt(burstCC), "burst")
		if err == nil && png != "" {
			if err = plotBurst(b, png); err == nil {
				b.Picture = png
				e.logf("burst: timeline written to %s", png)
			}
		}
		res.Burst = b
		note("burst", err)
	}
	if want["burst10k"] {
		bl, err := runBurstLarge(e, e.size(10000, 2000))
		res.BurstLarge = bl
		note("burst10k", err)
	}
	if want["failover"] {
		f, err := runFailover(e)
		res.Failover = f
		note("failover", err)
	}
	if want["eg"] {
		g, err := runEG(e, e.size(20, 3), e.size(1000, 100))
		res.EnvoyGateway = g
		note("eg", err)
	}
	if want["egsplit"] {
		s, err := runEGSplit(e)
		res.EGSplit = s
		note("egsplit", err)
	}
	if want["knobs"] {
		note("knobs", runKnobs(e, filepath.Dir(out)))
	}
	if want["abuse"] {
		ab, err := runAbuse(e)
		res.Abuse = ab
		note("abuse", err)
	}
	if want["scale"] {
		sc, err := runScale(e, e.size(10000, 1000))
		res.Scale = sc
		note("scale", err)
	}
	if want["scale100k"] {
		n := e.size(100000, 20000)
		if e.largeN > 0 {
			n = e.largeN
		}
		sl, err := runScale100k(e, n)
		res.Scale100k = sl
		note("scale100k", err)
	}
	if want["protocols"] {
		pr, err := runProtocols(e)
		res.Protocols = pr
		note("protocols", err)
	}
	res.Finished, res.Load1End = time.Now(), load1()
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return err
	}
	if err := res.Write(out); err != nil {
		return err
	}
	e.logf("figures written to %s", out)
	return errors.Join(failed...)
}

// runPeersMain runs the peers scenario (in the namespaces peers.ReexecInNetns
// made) and writes its figures to out, even when a peer failed.
func runPeersMain(e *env, pc peersConfig, out string) error {
	if err := peers.LoopbackUp(); err != nil {
		return err
	}
	res, err := runPeers(e, pc)
	if err != nil {
		res.Errors = append(res.Errors, err.Error())
		res.Finished, res.Load1End = time.Now(), load1()
	}
	for i := range res.Peers {
		pr := &res.Peers[i]
		pr.Command, pr.Config, pr.Error = e.redact(pr.Command), e.redact(pr.Config), e.redact(pr.Error)
	}
	for i := range res.Sides {
		res.Sides[i].Failed = e.redact(res.Sides[i].Failed)
	}
	for i := range res.Errors {
		res.Errors[i] = e.redact(res.Errors[i])
	}
	if err := res.Write(out); err != nil {
		return err
	}
	e.logf("peers: figures written to %s", out)
	if len(res.Errors) > 0 {
		return errors.New(strings.Join(res.Errors, "; "))
	}
	return nil
}

// load1 returns the 1-minute load average (0 when unknown).
func load1() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	f, _ := strconv.ParseFloat(strings.Fields(string(b))[0], 64)
	return f
}
