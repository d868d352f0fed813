package startgc

import (
	"os"
	"path/filepath"
	"runtime/debug"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
)

func gcPercent() int {
	p := debug.SetGCPercent(100)
	debug.SetGCPercent(p)
	return p
}

func memLimit() int64 { return debug.SetMemoryLimit(-1) }

// TestRaise: GOGC is raised and bounded only when the user set neither
// GOGC nor GOMEMLIMIT and the memory is known; Restore puts back what was
// there, once.
func TestRaise(t *testing.T) {
	const mem = 8 << 30
	for _, tc := range []struct {
		name   string
		env    map[string]string
		memory int64
		raised bool
		log    string
	}{
		{"defaults", nil, mem, true, "start-up GC: GOGC raised until ready (set GOGC to keep your own)"},
		{"GOGC set", map[string]string{"GOGC": "100"}, mem, false, "start-up GC unchanged: GOGC is set"},
		{"GOMEMLIMIT set", map[string]string{"GOMEMLIMIT": "1GiB"}, mem, false, "start-up GC unchanged: GOMEMLIMIT is set"},
		{"memory unknown", nil, 0, false, "start-up GC unchanged: the memory available is unknown"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			beforePct, beforeLim := gcPercent(), memLimit()
			core, logs := observer.New(zap.InfoLevel)
			st := Raise(zap.New(core), Settings{Getenv: func(k string) string { return tc.env[k] }, MemoryBytes: tc.memory})
			t.Cleanup(func() { st.Restore("cleanup") }) // a failed check leaves no raised GOGC to later tests
			if got := logs.All(); len(got) != 1 || got[0].Message != tc.log {
				t.Fatalf("logs %v, want one %q", got, tc.log)
			}
			wantPct, wantLim := beforePct, beforeLim
			if tc.raised {
				wantPct, wantLim = Percent, tc.memory/2
			}
			if p, l := gcPercent(), memLimit(); p != wantPct || l != wantLim {
				t.Fatalf("while starting GOGC %d limit %d, want %d %d", p, l, wantPct, wantLim)
			}
			st.Restore("ready")
			st.Restore("again")
			if p, l := gcPercent(), memLimit(); p != beforePct || l != beforeLim {
				t.Fatalf("after Restore GOGC %d limit %d, want %d %d", p, l, beforePct, beforeLim)
			}
			wantLogs := 1
			if tc.raised {
				wantLogs = 2 // one "restored", however many calls
			}
			if n := logs.Len(); n != wantLogs {
				t.Fatalf("%d log lines, want %d: %v", n, wantLogs, logs.All())
			}
		})
	}
}

// TestMemTotal reads MemTotal in bytes and refuses what it cannot read.
func TestMemTotal(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		text string
		want int64
	}{
		{"MemFree:  10 kB\nMemTotal:       24576000 kB\n", 24576000 << 10},
		{"MemTotal: lots\n", 0},
		{"MemTotal: -5 kB\n", 0},
		{"nothing\n", 0},
	} {
		p := filepath.Join(dir, "meminfo")
		if err := os.WriteFile(p, []byte(tc.text), 0o600); err != nil {
			t.Fatal(err)
		}
		if got := memTotal(p); got != tc.want {
			t.Errorf("memTotal(%q) = %d, want %d", tc.text, got, tc.want)
		}
	}
	if got := memTotal(filepath.Join(dir, "absent")); got != 0 {
		t.Errorf("memTotal of a missing file = %d, want 0", got)
	}
	if Memory() <= 0 {
		t.Error("Memory() found no memory on this Linux machine")
	}
}

// TestRestoreNil: a Start never raised (nil) restores nothing.
func TestRestoreNil(t *testing.T) {
	var st *Start
	p := gcPercent()
	st.Restore("ready")
	if gcPercent() != p {
		t.Fatal("a nil Start changed GOGC")
	}
}
