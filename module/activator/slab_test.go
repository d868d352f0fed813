//go:build cgo

package main

import "testing"

func TestSlabIssuesAndReusesIDs(t *testing.T) {
	if lookupFilter(0) != nil || lookupFilter(maxFilters) != nil || lookupFilter(maxFilters-1) != nil {
		t.Fatal("lookup of an id never issued returned a filter")
	}
	seen := map[uint32]bool{}
	var fs []*filter
	for i := 0; i < chunkSize+10; i++ { // crosses a chunk boundary
		f := newFilter()
		if f == nil || f.id == 0 || seen[f.id] {
			t.Fatalf("filter %d: %+v (duplicate or null id)", i, f)
		}
		seen[f.id] = true
		if lookupFilter(uintptr(f.id)) != f {
			t.Fatalf("lookup of id %d returned another filter", f.id)
		}
		fs = append(fs, f)
	}
	last := fs[len(fs)-1]
	id := last.id
	last.failed = true
	freeFilter(last)
	again := newFilter()
	if again.id != id || again.failed {
		t.Fatalf("freed id not reused with a zeroed filter: got id %d (want %d), failed %v", again.id, id, again.failed)
	}
	for _, f := range fs[:len(fs)-1] {
		freeFilter(f)
	}
	freeFilter(again)
}
