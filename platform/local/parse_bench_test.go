package local

import (
	"fmt"
	"strings"
	"testing"

	"github.com/thaw-dev/thaw/revision"
)

// BenchmarkParse10k parses a file of 10,000 revisions shaped like the scale
// scenario's (bench/scenarios: a host, a command, readiness, stop timeout,
// initial scale 0): the part of `thaw local`'s start-up before Envoy is
// started that grows with the revision count.
func BenchmarkParse10k(b *testing.B) {
	const n = 10000
	var sb strings.Builder
	sb.WriteString("revisions:\n")
	for i := range n {
		fmt.Fprintf(&sb, "  - name: s%05d\n    hosts: [s%05d.bench]\n    command: [\"/bin/true\", --port, \"{port}\"]\n", i, i)
		fmt.Fprintf(&sb, "    env:\n      BODY: hello from s%05d\n", i)
		sb.WriteString("    readiness:\n      path: /healthz\n      period: 1s\n    stopTimeout: 5s\n    autoscaling:\n      initial-scale: \"0\"\n")
	}
	data := []byte(sb.String())
	dir := b.TempDir()
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		cfg, err := ParseWithin("bench.yaml", dir, data, revision.DefaultSpec(), revision.Limits{})
		if err != nil {
			b.Fatal(err)
		}
		if len(cfg.Revisions) != n {
			b.Fatalf("%d revisions parsed, want %d (errors: %v)", len(cfg.Revisions), n, cfg.Errors[:min(3, len(cfg.Errors))])
		}
	}
}

// BenchmarkParse100k parses the scale100k scenario's file (bench/scenarios:
// 100,000 idle revisions, a host, a command and initial scale 0 each) as
// `thaw local` reads it at start: written as YAML (one flow-style line per
// revision), and written as JSON, read on the JSON fast path and, for the
// same-run baseline, through the YAML path.
func BenchmarkParse100k(b *testing.B) {
	const n = 100000
	var y, j strings.Builder
	y.WriteString("revisions:\n")
	j.WriteString("{\"revisions\": [\n")
	for i := range n {
		fmt.Fprintf(&y, "  - {name: s%06d, hosts: [s%06d.bench], command: [\"/bin/true\", --port, \"{port}\"], autoscaling: {initial-scale: \"0\"}}\n", i, i)
		sep := ","
		if i == n-1 {
			sep = ""
		}
		fmt.Fprintf(&j, "  {\"name\": \"s%06d\", \"hosts\": [\"s%06d.bench\"], \"command\": [\"/bin/true\", \"--port\", \"{port}\"], \"autoscaling\": {\"initial-scale\": \"0\"}}%s\n", i, i, sep)
	}
	j.WriteString("]}\n")
	dir := b.TempDir()
	for _, bc := range []struct {
		name string
		data string
		fast bool
	}{
		{"yaml", y.String(), true},
		{"json-yaml-path", j.String(), false},
		{"json-fast", j.String(), true},
	} {
		b.Run(bc.name, func(b *testing.B) {
			data := []byte(bc.data)
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				cfg, err := parseWithin("bench", dir, data, revision.DefaultSpec(), revision.Limits{}, bc.fast)
				if err != nil {
					b.Fatal(err)
				}
				if len(cfg.Revisions) != n {
					b.Fatalf("%d revisions parsed, want %d", len(cfg.Revisions), n)
				}
			}
		})
	}
}

// BenchmarkPlainJSON100k is the fast path's own scan of that JSON file
// (duplicate keys, what YAML would read otherwise), without the decode.
func BenchmarkPlainJSON100k(b *testing.B) {
	var j strings.Builder
	j.WriteString("{\"revisions\": [\n")
	for i := range 100000 {
		if i > 0 {
			j.WriteString(",\n")
		}
		fmt.Fprintf(&j, "  {\"name\": \"s%06d\", \"hosts\": [\"s%06d.bench\"], \"command\": [\"/bin/true\", \"--port\", \"{port}\"], \"autoscaling\": {\"initial-scale\": \"0\"}}", i, i)
	}
	j.WriteString("]}\n")
	data := []byte(j.String())
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, ok := plainJSON(data); !ok {
			b.Fatal("not plain JSON")
		}
	}
}
