package harness

import (
	"os"
	"path/filepath"
	"testing"
)

func TestEGEnvoyAdmin(t *testing.T) {
	run := t.TempDir()
	if _, err := EGEnvoyAdmin(run); err == nil {
		t.Fatal("no run yet: no error")
	}
	write := func(sub, addr string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Join(run, sub), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(run, sub, "admin-address.txt"), []byte(addr), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("1000", "")
	if _, err := EGEnvoyAdmin(run); err == nil {
		t.Fatal("empty admin-address.txt: no error")
	}
	write("1000", "127.0.0.1:19000\n")
	write("2000", "127.0.0.1:19001\n")
	if got, err := EGEnvoyAdmin(run); err != nil || got != "http://127.0.0.1:19001" {
		t.Fatalf("EGEnvoyAdmin = %q, %v; want the last run's http://127.0.0.1:19001", got, err)
	}
}
