package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"time"

	"github.com/thaw-dev/thaw/bench/results"
)

// liveHeap fills s.HeapLiveMiB: thaw's Go heap in use right after a
// forced collection (its admin /debug/pprof/heap?gc=1 collects before it
// answers), the heap thaw keeps, where go_memstats_heap_inuse_bytes
// sampled at any moment also holds the garbage of the current GC cycle.
// The profile is written to profile when set. Where thaw serves no
// profiles (404) it leaves HeapLiveMiB at 0.
func liveHeap(th *thaw, profile string, s *results.Scale) error {
	c := &http.Client{Timeout: 60 * time.Second}
	resp, err := c.Get(th.adminURL + "/debug/pprof/heap?gc=1")
	if err != nil {
		return fmt.Errorf("heap profile: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNotFound {
		return nil
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("heap profile: %s", resp.Status)
	}
	var w io.Writer = io.Discard
	if profile != "" {
		f, err := os.Create(profile)
		if err != nil {
			return fmt.Errorf("heap profile: %w", err)
		}
		defer f.Close()
		w = f
	}
	if _, err := io.Copy(w, resp.Body); err != nil {
		return fmt.Errorf("heap profile: %w", err)
	}
	m, err := scrape(th.adminURL + "/metrics")
	if err != nil {
		return err
	}
	s.HeapLiveMiB = m["go_memstats_heap_inuse_bytes"] / (1 << 20)
	return nil
}
