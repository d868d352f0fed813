package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/thaw-dev/thaw/platform/local"
	"github.com/thaw-dev/thaw/revision"
)

func TestWriteRevisionList(t *testing.T) {
	cfg := func(n int) *local.Config {
		c := &local.Config{}
		for i := range n {
			spec := revision.DefaultSpec()
			spec.Hosts = []string{fmt.Sprintf("r%d.example.com", i)}
			c.Revisions = append(c.Revisions, local.RevisionConfig{Key: revision.Key{Namespace: "local", Name: fmt.Sprintf("r%d", i)}, Spec: spec})
		}
		return c
	}
	for _, tc := range []struct {
		n, limit, lines int
		more            string
	}{
		{3, 20, 3, ""},
		{20, 20, 20, ""},
		{10000, 20, 21, "... and 9980 more revisions"},
	} {
		var b strings.Builder
		writeRevisionList(&b, cfg(tc.n), "127.0.0.1", 8080, tc.limit)
		lines := strings.Split(strings.TrimRight(b.String(), "\n"), "\n")
		if len(lines) != tc.lines {
			t.Errorf("%d revisions, limit %d: %d lines, want %d", tc.n, tc.limit, len(lines), tc.lines)
		}
		if !strings.Contains(lines[0], "curl -H 'Host: r0.example.com' http://127.0.0.1:8080/") {
			t.Errorf("first line %q", lines[0])
		}
		if tc.more != "" && !strings.Contains(lines[len(lines)-1], tc.more) {
			t.Errorf("last line %q, want %q", lines[len(lines)-1], tc.more)
		}
	}
}
