package harness

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

func TestWriteKwokConfig(t *testing.T) {
	for _, immediate := range []bool{false, true} {
		path := filepath.Join(t.TempDir(), "kwok.yaml")
		if err := writeKwokConfig(path, immediate); err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, doc := range bytes.Split(data, []byte("\n---\n")) {
			var obj struct {
				Kind     string `json:"kind"`
				Metadata struct {
					Name string `json:"name"`
				} `json:"metadata"`
			}
			if err := yaml.Unmarshal(doc, &obj); err != nil {
				t.Fatalf("immediate=%v: document does not parse: %v\n%s", immediate, err, doc)
			}
			if obj.Kind != "Stage" {
				t.Errorf("immediate=%v: kind %q, want Stage", immediate, obj.Kind)
			}
			names = append(names, obj.Metadata.Name)
		}
		if got, want := strings.Join(names, ","), "thaw-node-ready,thaw-pod-run,thaw-pod-delete"; got != want {
			t.Errorf("immediate=%v: stages %s, want %s", immediate, got, want)
		}
		wantReady := `{{ $ready := "False" }}`
		if immediate {
			wantReady = `{{ $ready := "True" }}`
		}
		if !bytes.Contains(data, []byte(wantReady)) {
			t.Errorf("immediate=%v: config lacks %s", immediate, wantReady)
		}
	}
}
