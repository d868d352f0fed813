package app

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/thaw-dev/thaw/xds"
)

func TestWriteExcludedTable(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 1, 0, 0, time.UTC)
	var buf bytes.Buffer
	if err := WriteExcludedTable(&buf, nil, now); err != nil || buf.Len() != 0 {
		t.Fatalf("no exclusions: wrote %q, err %v; want nothing", buf.String(), err)
	}
	nodes := []xds.ExcludedNode{{ID: "envoy-7", Reason: "ack_timeout", At: now.Add(-42 * time.Second), Pending: 3},
		{Reason: "no_request", At: now}}
	if err := WriteExcludedTable(&buf, nodes, now); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{"envoy-7", "ack_timeout", "42s", "(none sent)", "no_request"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}
