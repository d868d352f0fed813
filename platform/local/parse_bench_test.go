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
