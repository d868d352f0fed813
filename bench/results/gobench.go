package results

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// GoBench is one result line of `go test -bench` output.
type GoBench struct {
	// Pkg is the import path from the preceding "pkg:" line.
	Pkg string
	// Name is the benchmark name without the "Benchmark" prefix and the
	// GOMAXPROCS suffix, e.g. "Decide/linear".
	Name string
	// Procs is GOMAXPROCS (the "-N" suffix; 1 when absent).
	Procs int
	// N is the iteration count.
	N int64
	// Metrics maps a unit ("ns/op", "B/op", "samples/cpu-s") to its value.
	Metrics map[string]float64
}

// ParseGoBench reads `go test -bench` output (the standard text format) and
// returns its result lines in order. Lines that are not results (logs,
// PASS, ok) are skipped; a result line with an odd value/unit list is an
// error.
func ParseGoBench(r io.Reader) ([]GoBench, error) {
	var out []GoBench
	pkg := ""
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for line := 1; sc.Scan(); line++ {
		text := sc.Text()
		if p, ok := strings.CutPrefix(text, "pkg: "); ok {
			pkg = strings.TrimSpace(p)
			continue
		}
		if !strings.HasPrefix(text, "Benchmark") {
			continue
		}
		fields := strings.Fields(text)
		if len(fields) < 4 {
			continue // a name printed alone (benchmark logs follow) or a failure
		}
		n, err := strconv.ParseInt(fields[1], 10, 64)
		if err != nil {
			continue
		}
		if len(fields)%2 != 0 {
			return nil, fmt.Errorf("line %d: odd value/unit list: %q", line, text)
		}
		b := GoBench{Pkg: pkg, N: n, Procs: 1, Metrics: map[string]float64{}}
		b.Name = strings.TrimPrefix(fields[0], "Benchmark")
		if i := strings.LastIndexByte(b.Name, '-'); i > 0 {
			if p, err := strconv.Atoi(b.Name[i+1:]); err == nil {
				b.Name, b.Procs = b.Name[:i], p
			}
		}
		for i := 2; i+1 < len(fields); i += 2 {
			v, err := strconv.ParseFloat(fields[i], 64)
			if err != nil {
				return nil, fmt.Errorf("line %d: value %q: %w", line, fields[i], err)
			}
			b.Metrics[fields[i+1]] = v
		}
		out = append(out, b)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read benchmark output: %w", err)
	}
	return out, nil
}

// Find returns the first result whose package ends with pkgSuffix and whose
// name equals name, and whether there was one.
func Find(bs []GoBench, pkgSuffix, name string) (GoBench, bool) {
	for _, b := range bs {
		if strings.HasSuffix(b.Pkg, pkgSuffix) && b.Name == name {
			return b, true
		}
	}
	return GoBench{}, false
}
