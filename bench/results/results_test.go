package results

import (
	"path/filepath"
	"strings"
	"testing"
)

const benchOutput = `goos: linux
goarch: amd64
pkg: github.com/thaw-dev/thaw/autoscaler
cpu: Intel(R) Xeon(R) Processor
BenchmarkDecide/linear-2             	 1000000	      1152 ns/op	       227.0 cpu-ns/op	       0 B/op	       0 allocs/op
BenchmarkTick10kRevisions            	      14	  74224514 ns/op	        20.48 cpu-ms/tick
--- BENCH: BenchmarkTick10kRevisions
    bench_test.go:12: a log line
PASS
ok  	github.com/thaw-dev/thaw/autoscaler	1.534s
pkg: github.com/thaw-dev/thaw/e2e
BenchmarkXDSEnvoy10k-2
BenchmarkXDSEnvoy10k-2   	     200	  28779329 ns/op	       272.0 flip-bytes
`

func TestParseGoBench(t *testing.T) {
	bs, err := ParseGoBench(strings.NewReader(benchOutput))
	if err != nil {
		t.Fatal(err)
	}
	if len(bs) != 3 {
		t.Fatalf("got %d results, want 3: %+v", len(bs), bs)
	}
	tests := []struct {
		pkg, name string
		procs     int
		n         int64
		unit      string
		want      float64
	}{
		{"/autoscaler", "Decide/linear", 2, 1000000, "cpu-ns/op", 227},
		{"/autoscaler", "Tick10kRevisions", 1, 14, "ns/op", 74224514},
		{"/e2e", "XDSEnvoy10k", 2, 200, "flip-bytes", 272},
	}
	for _, tt := range tests {
		b, ok := Find(bs, tt.pkg, tt.name)
		if !ok {
			t.Errorf("%s %s not found", tt.pkg, tt.name)
			continue
		}
		if b.Procs != tt.procs || b.N != tt.n || b.Metrics[tt.unit] != tt.want {
			t.Errorf("%s: procs %d n %d %s %v; want %d %d %v", tt.name, b.Procs, b.N, tt.unit, b.Metrics[tt.unit], tt.procs, tt.n, tt.want)
		}
	}
	if _, ok := Find(bs, "/xds", "Decide/linear"); ok {
		t.Error("Find matched the wrong package")
	}
}

func TestParseGoBenchRejectsOddMetrics(t *testing.T) {
	if _, err := ParseGoBench(strings.NewReader("BenchmarkX-2 10 5 ns/op 7\n")); err == nil {
		t.Fatal("want an error for a value without a unit")
	}
}

func TestQuantile(t *testing.T) {
	xs := func() []float64 {
		out := make([]float64, 100)
		for i := range out {
			out[i] = float64(100 - i) // 100..1, unsorted
		}
		return out
	}
	tests := []struct {
		q    float64
		want float64
	}{{0, 1}, {0.5, 50}, {0.99, 99}, {1, 100}}
	for _, tt := range tests {
		if got := Quantile(xs(), tt.q); got != tt.want {
			t.Errorf("Quantile(1..100, %v) = %v, want %v", tt.q, got, tt.want)
		}
	}
	if got := Quantile(nil, 0.5); got != 0 {
		t.Errorf("Quantile(nil) = %v, want 0", got)
	}
	if got := Quantile([]float64{3, 1, 2}, 0.99); got != 3 {
		t.Errorf("p99 of 3 values = %v, want the largest", got)
	}
}

func TestScenariosRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.json")
	in := &Scenarios{Quick: true, Burst: &Burst{Requests: 1000, Samples: []BurstSample{{TMs: 50, Held: 7}}}}
	if err := in.Write(path); err != nil {
		t.Fatal(err)
	}
	out, err := ReadScenarios(path)
	if err != nil {
		t.Fatal(err)
	}
	if !out.Quick || out.Burst == nil || out.Burst.Requests != 1000 || out.Burst.Samples[0].Held != 7 {
		t.Fatalf("round trip lost data: %+v", out)
	}
}

func TestMedianRatioAndDiff(t *testing.T) {
	a := []float64{2, 9, 4, 0}
	b := []float64{1, 1, 2, 5}
	if r, ok := MedianRatio(a, b); !ok || r != 2 {
		t.Errorf("MedianRatio = %v %v, want 2 true (ratios 2, 9, 2; zero round skipped)", r, ok)
	}
	if d, ok := MedianDiff(a, b); !ok || d != 2 {
		t.Errorf("MedianDiff = %v %v, want 2 true (diffs 1, 8, 2)", d, ok)
	}
	if _, ok := MedianRatio(nil, b); ok {
		t.Error("MedianRatio of no rounds reported a value")
	}
	if m := median([]float64{4, 1, 3, 2}); m != 2.5 {
		t.Errorf("median of 1..4 = %v, want 2.5", m)
	}
}
