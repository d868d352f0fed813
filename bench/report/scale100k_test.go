package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/thaw-dev/thaw/bench/results"
)

func TestScale100kRows(t *testing.T) {
	micro := []results.GoBench{{Pkg: "github.com/thaw-dev/thaw/xds", Name: "ServerAddRemove100k",
		Metrics: map[string]float64{"ns/op": 4e9, "add-bytes": 1632, "remove-bytes": 254, "sync-MiB": 143}}}
	sl := &results.ScaleLarge{Scale: results.Scale{Revisions: 100000, ReadySeconds: 70, ThawRSSMiB: 1300, ThawPeakRSSMiB: 1600},
		Active: 3, ProfileSeconds: 20, TickSeconds: 2, LoopCPUPerTickMs: 150, ProcessCPUPerTickMs: 300,
		EndpointPushes: 20, EndpointBytes: 20 * 300, FlipToAckCount: 20, FlipToAckP99Ms: 40,
		Waking:     &results.FlipFigures{Count: 10, P99Ms: 40, MaxLowMs: 30, MaxMs: 40},
		BackToZero: &results.FlipFigures{Count: 5, P99Ms: 8.6, MaxLowMs: 8, MaxMs: 9},
		FlipCycles: 5, WakeOverheadP50Ms: 9, WakeOverheadP99Ms: 25}
	// ready, 1300 MiB, 150 ms, 300 B, waking 40 ms, back to zero 8.6 ms, 25 ms, 1632 B
	want := []string{info, fail, pass, pass, fail, pass, fail, pass}
	check := func(name string, rows []row, want []string) {
		t.Helper()
		if len(rows) != len(want) {
			t.Fatalf("%s: %d rows, want %d", name, len(rows), len(want))
		}
		for i, r := range rows {
			if r.Result != want[i] {
				t.Errorf("%s row %d (%s): %s, want %s (measured %s)", name, i, r.What, r.Result, want[i], r.Measured)
			}
		}
	}
	check("100k", scale100kRows(sl, micro), want)

	// A flip that sent anything but endpoints fails the bytes row.
	other := *sl
	other.OtherBytes = 5
	if r := scale100kRows(&other, micro)[3]; r.Result != fail {
		t.Errorf("flip with other types: %s, want %s (%s)", r.Result, fail, r.Measured)
	}
	// Wakes within the cold-start target pass; a run without wakes is not measured.
	fast := *sl
	fast.WakeOverheadP99Ms = 12
	if r := scale100kRows(&fast, micro)[6]; r.Result != pass || !strings.Contains(r.Measured, "p99 12.0 ms (p50 9.0 ms, 5 wakes)") {
		t.Errorf("cold-start row: %s (%s), want %s", r.Result, r.Measured, pass)
	}
	fast.FlipCycles = 0
	if r := scale100kRows(&fast, micro)[6]; r.Result != missing {
		t.Errorf("cold-start row without wakes: %s, want %s", r.Result, missing)
	}
	// A quick run (fewer revisions) is shown, not judged.
	quick := *sl
	quick.Revisions = 20000
	for i, r := range scale100kRows(&quick, nil) {
		if i < 7 && r.Result != info {
			t.Errorf("quick run row %d (%s): %s, want %s", i, r.What, r.Result, info)
		}
		if i == 7 && r.Result != missing {
			t.Errorf("no micro-benchmark: %s, want %s", r.Result, missing)
		}
	}
	// Not run: one row saying how to run it, and the in-process row.
	rows := scale100kRows(nil, micro)
	check("not run", rows, []string{missing, pass})
	if !strings.Contains(rows[0].Measured, "-only scale100k") {
		t.Errorf("not-run row does not say how to run it: %s", rows[0].Measured)
	}
}

// TestBuildReadsScale100k: make bench writes scale100k's figures to a file
// of their own; the report takes them from there.
func TestBuildReadsScale100k(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "commands.tsv"), []byte("scale100k\tgo run ./bench/scenarios -only scale100k\t0\t300\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s := &results.Scenarios{Scale100k: &results.ScaleLarge{Scale: results.Scale{Revisions: 100000, ThawRSSMiB: 900},
		Active: 3, FlipCycles: 5, BackAtZero: 4}, Errors: []string{"scale100k: boom"}}
	if err := s.Write(filepath.Join(dir, "scale100k.json")); err != nil {
		t.Fatal(err)
	}
	doc := renderDoc(t, dir)
	for _, want := range []string{
		"| whole thaw binary, 100000 idle + 3 active revisions: thaw RSS | 900 MiB",
		"this run had 100000 idle revisions,\nwoke 5 and saw 4 back at zero.",
		"**Scenario error:** scale100k: boom",
	} {
		if !strings.Contains(doc, want) {
			t.Errorf("document lacks %q", want)
		}
	}
}

// TestScale100kFlipRows: the waking and back-to-zero rows give each
// phase's figures and the activator, judge each p99 against 10 ms, and say
// "missing" rather than 0 for a phase that observed nothing.
func TestScale100kFlipRows(t *testing.T) {
	sl := &results.ScaleLarge{Scale: results.Scale{Revisions: 100000}, Activator: "module",
		Waking: &results.FlipFigures{Histograms: "a + b", Count: 20, P50Ms: 1.5, P90Ms: 3, P99Ms: 4.2, MeanMs: 1.81, MaxLowMs: 4, MaxMs: 5}}
	rows := scale100kRows(sl, nil)
	wake, back := rows[4], rows[5]
	if !strings.Contains(wake.What, "waking flip-to-ACK p99 (real Envoy, activator module)") || wake.Result != pass ||
		wake.Measured != "4.2 ms (p50 1.5, p90 3.0, mean 1.81 ms; slowest in (4.0, 5.0] ms; 20 changes; a + b, buckets 1 ms apart to 10 ms)" {
		t.Errorf("waking row: %q %s %q", wake.What, wake.Result, wake.Measured)
	}
	if !strings.Contains(back.What, "back to zero flip-to-ACK") || back.Result != missing || strings.Contains(back.Measured, "0.0 ms") {
		t.Errorf("back-to-zero row without changes: %q %s %q, want %s and no 0 figure", back.What, back.Result, back.Measured, missing)
	}
	sl.WakeClusterToAckCount, sl.WakeClusterToAckP99Ms = 19, 30.5
	if r := scale100kRows(sl, nil)[4]; !strings.HasSuffix(r.Measured, "; clusters sent ahead of the first backend ACKed p99 30.5 ms (19, thaw_xds_wake_cluster_to_ack_seconds)") || r.Result != pass {
		t.Errorf("waking row with clusters sent ahead: %s %q, want them named apart and the flip judged alone", r.Result, r.Measured)
	}
	sl.BackToZero = &results.FlipFigures{Count: 20, P99Ms: 10.5, MaxLowMs: 20000}
	if r := scale100kRows(sl, nil)[5]; r.Result != fail || !strings.Contains(r.Measured, "slowest > 20000.0 ms") {
		t.Errorf("back-to-zero row over target: %s %q, want %s", r.Result, r.Measured, fail)
	}
}
