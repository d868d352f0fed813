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
	Peers        *peersView
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
	peersOnly := flag.Bool("peers-only", false, "rewrite only the peers section of -o from <dir>/peers.json")
	flag.Parse()
	if *peersOnly {
		if err := rewritePeers(*dir, *out); err != nil {
			log.Fatal(err)
		}
		log.Printf("wrote the peers section of %s", *out)
		return
	}
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
func render(d *doc) ([]byte, error) { return renderNamed(d, "doc") }

// renderNamed executes the template name ("doc": the whole document,
// "peersSection": the peers section with its markers).
func renderNamed(d *doc, name string) ([]byte, error) {
	if d.Peers == nil {
		d.Peers = newPeersView(nil)
	}
	t, err := template.New("doc").Funcs(template.FuncMap{
		"f1":  func(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) },
		"f3":  func(v float64) string { return strconv.FormatFloat(v, 'f', 3, 64) },
		"f0":  func(v float64) string { return strconv.FormatFloat(v, 'f', 0, 64) },
		"ms":  fmtMs,
		"sec": fmtSeconds,
		"add": func(a, b int) int { return a + b },
		"indent": func(s string) string {
			return "  " + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n  ")
		},
		"sides": func(p *results.Paths) []results.Side {
			out := []results.Side{p.Static, p.Serve, p.ServeWithProxy, p.Proxy}
			for _, s := range []*results.Side{p.ServeWithModule, p.Module, p.ModuleCC4, p.StaticLimit4} {
				if s != nil {
					out = append(out, *s)
				}
			}
			return out
		},
	}).Parse(docTemplate)
	if err == nil {
		_, err = t.Parse(protocolsTemplate)
	}
	if err == nil {
		_, err = t.Parse(peersTemplate)
	}
	if err != nil {
		return nil, fmt.Errorf("template: %w", err)
	}
	var buf bytes.Buffer
	if err := t.ExecuteTemplate(&buf, name, d); err != nil {
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
	d.Summary = append(d.Summary, moduleRows(d.Paths)...)
	d.Summary = append(d.Summary, coldRows(d.Cold)...)
	d.Summary = append(d.Summary, protocolRows(in.Scenarios.Protocols)...)
	d.Summary = append(d.Summary, burstRows(d.Burst)...)
	d.Summary = append(d.Summary, burstLargeRows(in.Scenarios.BurstLarge)...)
	d.Summary = append(d.Summary, failoverRows(in.Scenarios.Failover)...)
	d.Summary = append(d.Summary, egRows(in.Scenarios.EnvoyGateway, in.Scenarios.Cold)...)
	d.Summary = append(d.Summary, egSplitRows(in.Scenarios.EGSplit)...)
	d.BurstLarge = newBurstLargeView(in.Scenarios.BurstLarge)
	d.Summary = append(d.Summary, microRows(in.Micro, in.XDS)...)
	d.Summary = append(d.Summary, scaleRows(in.Scenarios.Scale)...)
	if in.Scenarios.Scale100k == nil {
		// make bench runs scale100k as a step of its own.
		if s, err := results.ReadScenarios(filepath.Join(dir, "scale100k.json")); err == nil {
			in.Scenarios.Scale100k = s.Scale100k
			in.Scenarios.Errors = append(in.Scenarios.Errors, s.Errors...)
		}
	}
	d.Summary = append(d.Summary, scale100kRows(in.Scenarios.Scale100k, in.Micro)...)
	d.Summary = append(d.Summary, abuseRows(in.Scenarios.Abuse)...)
	d.Peers = newPeersView(readPeers(dir))
	d.Summary = append(d.Summary, d.Peers.Judged...)
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

// readPeers loads <dir>/peers.json, nil (logged) when there is none.
func readPeers(dir string) *results.Peers {
	p, err := results.ReadPeers(filepath.Join(dir, "peers.json"))
	if err != nil {
		log.Printf("no peers figures: %v", err)
		return nil
	}
	return p
}

// rewritePeers renders the peers section from <dir>/peers.json into the
// document at out, between peersBegin and peersEnd (when the document has
// no such section yet: before the micro-benchmarks, as the template places
// it, else at the end); the rest is kept.
func rewritePeers(dir, out string) error {
	p, err := results.ReadPeers(filepath.Join(dir, "peers.json"))
	if err != nil {
		return err
	}
	d := &doc{Peers: newPeersView(p)}
	buf, err := renderNamed(d, "peersSection")
	if err != nil {
		return err
	}
	old, err := os.ReadFile(out)
	if err != nil && !os.IsNotExist(err) {
		return err
	}
	text := string(old)
	section := strings.TrimRight(string(buf), "\n")
	b, e := strings.Index(text, peersBegin), strings.Index(text, peersEnd)
	switch {
	case b >= 0 && e > b:
		text = text[:b] + section + text[e+len(peersEnd):]
	case b >= 0 || e >= 0:
		return fmt.Errorf("%s: peers markers out of order: regenerate it with make bench", out)
	case strings.Contains(text, "\n## Micro-benchmarks"):
		// Where the template puts it.
		i := strings.Index(text, "\n## Micro-benchmarks") + 1
		text = text[:i] + section + "\n\n" + text[i:]
	default:
		text = strings.TrimRight(text, "\n") + "\n\n" + section + "\n"
	}
	return os.WriteFile(out, []byte(text), 0o644)
}
