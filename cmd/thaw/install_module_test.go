package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestInstallModule(t *testing.T) {
	src := filepath.Join(t.TempDir(), moduleFileName)
	if err := os.WriteFile(src, []byte("\x7fELF module"), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cmd := newRootCmd()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetArgs([]string{"install-module", "--from", src, dir})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(dir, moduleFileName)
	b, err := os.ReadFile(dst)
	if err != nil || string(b) != "\x7fELF module" {
		t.Fatalf("installed %q, %v", b, err)
	}
	if fi, _ := os.Stat(dst); fi.Mode().Perm() != 0o444 {
		t.Errorf("mode %v, want read-only", fi.Mode())
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("left %d files in %s, want only the module", len(ents), dir)
	}
	// Again over the read-only file: replaced.
	if _, err := installModule(src, dir); err != nil {
		t.Fatalf("second install: %v", err)
	}
	if _, err := installModule(src+".missing", dir); err == nil || !strings.Contains(err.Error(), "/"+moduleFileName) {
		t.Errorf("missing module: %v, want an error naming where the image carries it", err)
	}
	if _, err := installModule(src, filepath.Join(dir, "nope")); err == nil {
		t.Error("install into a missing directory succeeded")
	}
}
