package memo

import (
	"testing"

	"github.com/thaw-dev/thaw/revision"
	"github.com/thaw-dev/thaw/xds/internal/xdstest"
)

// BenchmarkTranslateFlip10k measures the server's incremental translation
// of one mode flip among 10,000 revisions.
func BenchmarkTranslateFlip10k(b *testing.B) {
	reg := xdstest.BenchRegistry(10000)
	cfg := testConfig()
	tr, err := New(&cfg, false)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := tr.Translate(reg.Snapshot()); err != nil {
		b.Fatal(err)
	}
	key := revision.Key{Namespace: "ns-0", Name: "app-0"}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		reg.SetMode(key, revision.Mode(i%2))
		if _, err := tr.Translate(reg.Snapshot()); err != nil {
			b.Fatal(err)
		}
	}
}
