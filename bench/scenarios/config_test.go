package main

import (
	"reflect"
	"testing"
	"time"

	"github.com/thaw-dev/thaw/platform/local"
	"github.com/thaw-dev/thaw/revision"
)

// TestLargeConfigFormats: scale100k's JSON file and its YAML file load to
// the same revisions in thaw.
func TestLargeConfigFormats(t *testing.T) {
	extra := []rev{
		{name: "active0", autoscaling: map[string]string{"min-scale": "1"}},
		{name: "flipper0", latency: time.Millisecond, autoscaling: map[string]string{"initial-scale": "0", "window": "30s"}},
	}
	js, err := largeConfigJSON("/bin/true", 3, extra)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	fromJSON, err := local.Parse("f.json", dir, []byte(js), revision.DefaultSpec())
	if err != nil {
		t.Fatal(err)
	}
	fromYAML, err := local.Parse("f.json", dir, []byte(largeConfig("/bin/true", 3, extra)), revision.DefaultSpec())
	if err != nil {
		t.Fatal(err)
	}
	if len(fromJSON.Revisions) != 5 || len(fromJSON.Errors) != 0 {
		t.Fatalf("JSON: %d revisions, errors %v; want 5 and none", len(fromJSON.Revisions), fromJSON.Errors)
	}
	if !reflect.DeepEqual(fromYAML.Revisions, fromJSON.Revisions) {
		t.Errorf("JSON and YAML files differ:\nyaml %+v\njson %+v", fromYAML.Revisions, fromJSON.Revisions)
	}
}
