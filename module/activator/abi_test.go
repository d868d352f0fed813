//go:build cgo

package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
)

// envoyBinary returns the pinned Envoy (`make tools`), or $ENVOY_BIN.
func envoyBinary(t *testing.T) string {
	t.Helper()
	bin := os.Getenv("ENVOY_BIN")
	if bin == "" {
		_, file, _, _ := runtime.Caller(0)
		bin = filepath.Join(filepath.Dir(file), "..", "..", ".tools", "bin", "envoy")
	}
	if _, err := os.Stat(bin); err != nil {
		t.Skipf("pinned Envoy %s not installed (run `make tools`): %v", bin, err)
	}
	return bin
}

// TestCallbacksExportedByPinnedEnvoy: every callback the module resolves
// is a defined dynamic symbol of the pinned Envoy.
func TestCallbacksExportedByPinnedEnvoy(t *testing.T) {
	out, err := exec.Command("nm", "-D", "--defined-only", envoyBinary(t)).Output()
	if err != nil {
		t.Fatalf("nm -D: %v", err)
	}
	defined := map[string]bool{}
	for _, line := range strings.Split(string(out), "\n") {
		if f := strings.Fields(line); len(f) == 3 && f[1] == "T" {
			defined[f[2]] = true
		}
	}
	names := callbackNames()
	if len(names) == 0 {
		t.Fatal("the module resolves no callback")
	}
	for _, n := range names {
		if !defined[n] {
			t.Errorf("pinned Envoy does not export %s", n)
		}
	}
}

// TestHooksKnownToPinnedEnvoy: every hook the module exports is a name the
// pinned Envoy looks up (a typo would leave a required hook missing), and
// the ABI version string the module returns is the pinned Envoy's.
func TestHooksKnownToPinnedEnvoy(t *testing.T) {
	bin, err := os.ReadFile(envoyBinary(t))
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile(`(?m)^//export (envoy_dynamic_module_on_\w+)$`)
	files, _ := filepath.Glob("*.go")
	var hooks []string
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range re.FindAllSubmatch(src, -1) {
			hooks = append(hooks, string(m[1]))
		}
	}
	if len(hooks) < 20 {
		t.Fatalf("found %d exported hooks, want every required one (>= 20)", len(hooks))
	}
	for _, h := range hooks {
		if !bytes.Contains(bin, []byte(h+"\x00")) {
			t.Errorf("pinned Envoy never looks up %s", h)
		}
	}
	if !bytes.Contains(bin, []byte("\x00"+abiVersion+"\x00")) {
		t.Errorf("ABI version %q is not the pinned Envoy's", abiVersion)
	}
}

// TestResolveCallbacksRefusesMissing: in a process that is not Envoy the
// callbacks are missing and loading is refused with a message naming one.
func TestResolveCallbacksRefusesMissing(t *testing.T) {
	err := resolveCallbacks()
	if err == nil || !strings.Contains(err.Error(), "envoy_dynamic_module_callback_") || !strings.Contains(err.Error(), abiVersion) {
		t.Fatalf("resolveCallbacks() = %v, want a refusal naming the missing callback and the ABI version", err)
	}
}
