package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// TestStatusOf: statusOf asks /status for each named revision alone and
// never for every row; a 404 leaves the revision out; an older thaw that
// answers every row still yields the named one only.
func TestStatusOf(t *testing.T) {
	all := []revStatus{{Revision: "local/a", Mode: "serve", Ready: 1}, {Revision: "local/b", Mode: "proxy"}}
	for _, old := range []bool{false, true} {
		var unfiltered int
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			want := r.URL.Query().Get("revision")
			if want == "" {
				unfiltered++
			}
			rows := all
			if !old {
				rows = nil
				for _, row := range all {
					if row.Revision == want {
						rows = append(rows, row)
					}
				}
				if len(rows) == 0 {
					http.Error(w, "not found", http.StatusNotFound)
					return
				}
			}
			_ = json.NewEncoder(w).Encode(rows)
		}))
		th := &thaw{adminURL: srv.URL}
		got, err := th.statusOf(context.Background(), &http.Client{Timeout: 5 * time.Second}, "a", "zzz")
		srv.Close()
		if err != nil {
			t.Fatalf("old=%v: %v", old, err)
		}
		if len(got) != 1 || got["local/a"] != all[0] || unfiltered != 0 {
			t.Errorf("old=%v: statusOf = %+v with %d unfiltered asks; want local/a alone, 0 unfiltered", old, got, unfiltered)
		}
	}
}
