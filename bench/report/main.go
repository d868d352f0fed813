// Command report renders docs/BENCHMARKS.md from what hack/bench.sh
// collected in one directory:
//
//	commands.tsv        one line per command: name, command, exit status, seconds
//	<name>.txt          each command's output (`go test -bench` text for the micro
//	                    and xDS benchmarks)
//	scenarios.json      bench/scenarios' figures
//	load-start, load-end  copies of /proc/loadavg around the run
//
// The document is a template (BENCHMARKS.md.tmpl); never edit the output by
// hand, rerun `make bench`.
package main

import (
	"bufio"
	"bytes"
	_ "embed"
	"flag"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"text/template"

	"github.com/thaw-dev/thaw/bench/results"
)

//go:embed BENCHMARKS.md.tmpl
var docTemplate string

// command is one line of commands.tsv.
type command struct {
	Name, Command string
	Exit          int
	Seconds       int
}

// doc is what the template renders.
type doc struct {
	Machine      machine
	LoadStart    string
	LoadEnd      string
	TotalMinutes string
	Commands     []command
	Failed       []string
	Summary      []row
	Paths        *results.Paths
	PathRounds   []pathRound
	Cold         []results.Cold
	Burst        *results.Burst
	BurstLarge   *burstLargeView
	Protocols    *protocolsView
	Micro        []microLine
	Scenarios    *results.Scenarios
	Picture      string
}

func main() {
	log.SetFlags(0)
	log.SetPrefix("report: ")
	dir := flag.String("dir", "bench/out", "directory hack/bench.sh wrote")
	out := flag.String("o", "docs/BENCHMARKS.md", "where to write the document")
	envoyBin := flag.String("envoy", os.Getenv("ENVOY_BIN"), "Envoy binary (for its version)")
	flag.Parse()
	d, err := build(*dir, *envoyBin, *out)
	if err != nil {
		log.Fatal(err)
	}
	buf, err := render(d)
	if err != nil {
		log.Fatal(err)
	}
	if err := os.WriteFile(*out, buf, 0o644); err != nil {
		log.Fatal(err)
	}
	log.Printf("wrote %s", *out)
}

// render executes the document template.
func render(d *doc) ([]byte, error) {
	t, err := template.New("doc").Funcs(template.FuncMap{
		"f1":  func(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) },
		"f3":  func(v float64) string { return strconv.FormatFloat(v, 'f', 3, 64) },
		"f0":  func(v float64) string { return strconv.FormatFloat(v, 'f', 0, 64) },
		"ms":  fmtMs,
		"sec": fmtSeconds,
		"add": func(a, b int) int { return a + b },
		"sides": func(p *results.Paths) []results.Side {
			return []results.Side{p.Static, p.Serve, p.ServeWithProxy, p.Proxy}
		},
	}).Parse(docTemplate)
	if err == nil {
		_, err = t.Parse(protocolsTemplate)
	}
	if err != nil {
		return nil, fmt.Errorf("template: %w", err)
	}
	var buf bytes.Buffer
	if err := t.Execute(&buf, d); err != nil {
		return nil, fmt.Errorf("template: %w", err)
	}
	return buf.Bytes(), nil
}

func build(dir, envoyBin, out string) (*doc, error) {
	d := &doc{Machine: readMachine(envoyBin), LoadStart: loadAvg(filepath.Join(dir, "load-start")),
		LoadEnd: loadAvg(filepath.Join(dir, "load-end"))}
	cmds, err := readCommands(filepath.Join(dir, "commands.tsv"))
	if err != nil {
		return nil, err
	}
	d.Commands = cmds
	total := 0
	in := inputs{}
	for _, c := range cmds {
		total += c.Seconds
		if c.Exit != 0 {
			d.Failed = append(d.Failed, fmt.Sprintf("%s (exit %d)", c.Name, c.Exit))
		}
		if !strings.HasPrefix(c.Name, "micro-") && !strings.HasPrefix(c.Name, "xds-") {
			continue
		}
		f, err := os.Open(filepath.Join(dir, c.Name+".txt"))
		if err != nil {
			return nil, err
		}
		bs, err := results.ParseGoBench(f)
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", c.Name, err)
		}
		if strings.HasPrefix(c.Name, "xds-") {
			in.XDS = append(in.XDS, bs...)
		} else {
			in.Micro = append(in.Micro, bs...)
		}
	}
	d.TotalMinutes = fmt.Sprintf("%.1f", float64(total)/60)
	if s, err := results.ReadScenarios(filepath.Join(dir, "scenarios.json")); err == nil {
		in.Scenarios = s
	} else {
		log.Printf("no scenario figures: %v", err)
		in.Scenarios = &results.Scenarios{}
	}
	d.Scenarios = in.Scenarios
	d.Paths, d.Cold, d.Burst = in.Scenarios.Paths, in.Scenarios.Cold, in.Scenarios.Burst
	if d.Burst != nil && d.Burst.Picture != "" {
		// The picture path is relative to the repository; the document
		// links it relative to itself.
		rel, err := filepath.Rel(filepath.Dir(out), d.Burst.Picture)
		if err == nil {
			d.Picture = filepath.ToSlash(rel)
		}
	}
	d.PathRounds = pathRounds(d.Paths)
	d.Protocols = newProtocolsView(in.Scenarios.Protocols)
	d.Summary = append(d.Summary, pathRows(d.Paths)...)
	d.Summary = append(d.Summary, coldRows(d.Cold)...)
	d.Summary = append(d.Summary, protocolRows(in.Scenarios.Protocols)...)
	d.Summary = append(d.Summary, burstRows(d.Burst)...)
	d.Summary = append(d.Summary, burstLargeRows(in.Scenarios.BurstLarge)...)
	d.Summary = append(d.Summary, failoverRows(in.Scenarios.Failover)...)
	d.BurstLarge = newBurstLargeView(in.Scenarios.BurstLarge)
	d.Summary = append(d.Summary, microRows(in.Micro, in.XDS)...)
	d.Summary = append(d.Summary, scaleRows(in.Scenarios.Scale)...)
	d.Summary = append(d.Summary, abuseRows(in.Scenarios.Abuse)...)
	d.Micro = microTable(append(append([]results.GoBench{}, in.Micro...), in.XDS...))
	return d, nil
}

func readCommands(path string) ([]command, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("commands: %w", err)
	}
	defer f.Close()
	var cmds []command
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		parts := strings.Split(sc.Text(), "\t")
		if len(parts) != 4 {
			continue
		}
		exit, _ := strconv.Atoi(parts[2])
		secs, _ := strconv.Atoi(parts[3])
		cmds = append(cmds, command{Name: parts[0], Command: parts[1], Exit: exit, Seconds: secs})
	}
	return cmds, sc.Err()
}
