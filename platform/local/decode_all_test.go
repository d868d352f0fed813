package local

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/thaw-dev/thaw/revision"
)

// TestDecodeAllMatchesPerEntry: the one-pass decode of a valid file builds
// the same configs, keys and errors as the per-entry decode it replaces.
func TestDecodeAllMatchesPerEntry(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "valid.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	js, err := yamlToJSON(data)
	if err != nil {
		t.Fatal(err)
	}
	revs, ok := decodeAll(js)
	if !ok {
		t.Fatal("decodeAll refused testdata/valid.yaml")
	}
	var f file
	if err := decodeStrict(js, &f); err != nil {
		t.Fatal(err)
	}
	if len(revs) != len(f.Revisions) || len(revs) == 0 {
		t.Fatalf("decodeAll found %d entries, per entry %d", len(revs), len(f.Revisions))
	}
	dir := t.TempDir()
	for i := range revs {
		gotRC, gotKey, gotErrs := checkRevision(revs[i], dir, revision.DefaultSpec(), revision.Limits{})
		wantRC, wantKey, wantErrs := parseRevision(f.Revisions[i], dir, revision.DefaultSpec(), revision.Limits{})
		if diff := cmp.Diff(wantRC, gotRC, cmpopts.EquateEmpty(), cmp.AllowUnexported(RevisionConfig{})); diff != "" {
			t.Errorf("entry %d: config differs (-per entry +one pass):\n%s", i, diff)
		}
		if gotKey != wantKey || len(gotErrs) != len(wantErrs) {
			t.Errorf("entry %d: key %v errors %v, per entry %v %v", i, gotKey, gotErrs, wantKey, wantErrs)
		}
	}
}

// TestDecodeAllFallsBackPerEntry: one entry with an unknown field or a
// wrong type makes the one-pass decode give up, and the file is read entry
// by entry: the bad entry is reported by name, the good one still loads.
func TestDecodeAllFallsBackPerEntry(t *testing.T) {
	for name, bad := range map[string]string{
		"unknown field": "  - name: bad\n    command: [x]\n    colour: blue\n",
		"wrong type":    "  - name: bad\n    command: 7\n",
		"not an object": "  - just-a-string\n",
	} {
		t.Run(name, func(t *testing.T) {
			data := "revisions:\n  - name: good\n    hosts: [good.test]\n    command: [/bin/true]\n" + bad
			js, err := yamlToJSON([]byte(data))
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := decodeAll(js); ok {
				t.Fatal("decodeAll accepted a file with a bad entry")
			}
			cfg, err := ParseWithin("t.yaml", t.TempDir(), []byte(data), revision.DefaultSpec(), revision.Limits{})
			if err != nil {
				t.Fatal(err)
			}
			if len(cfg.Revisions) != 1 || cfg.Revisions[0].Key.Name != "good" {
				t.Fatalf("revisions %+v, want only good (errors %v)", cfg.Revisions, cfg.Errors)
			}
			if len(cfg.Errors) != 1 {
				t.Fatalf("errors %v, want one", cfg.Errors)
			}
			if name != "not an object" && !strings.Contains(cfg.Errors[0].Error(), "bad") {
				t.Errorf("error %q does not name the bad revision", cfg.Errors[0])
			}
		})
	}
}

// TestDecodeAllNotAnObject: a file that is not an object keeps its
// file-level error.
func TestDecodeAllNotAnObject(t *testing.T) {
	if _, err := ParseWithin("t.yaml", t.TempDir(), []byte("[1, 2]"), revision.DefaultSpec(), revision.Limits{}); err == nil {
		t.Fatal("a list was accepted as a config file")
	}
	if _, ok := decodeAll(json.RawMessage(`{"revisions": 3}`)); ok {
		t.Fatal("decodeAll accepted revisions: 3")
	}
}
