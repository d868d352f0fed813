package translate

import "testing"

// BenchmarkTranslate10k measures one full translation of 10,000 revisions.
func BenchmarkTranslate10k(b *testing.B) {
	snap := benchSnapshot(10000)
	cfg := testConfig()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Translate(snap, cfg); err != nil {
			b.Fatal(err)
		}
	}
}
