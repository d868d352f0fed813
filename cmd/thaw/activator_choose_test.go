package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/thaw-dev/thaw/internal/modcheck"
)

// fakeModuleSO compiles a shared object shaped like the activator module
// (the dynamic-module entry point, one callback name); skips without cc.
func fakeModuleSO(t *testing.T, dir string) string {
	t.Helper()
	compiler, err := exec.LookPath("cc")
	if err != nil {
		t.Skipf("no C compiler: %v", err)
	}
	src := filepath.Join(dir, "m.c")
	so := filepath.Join(dir, "m.so")
	code := `const char* const n[] = {"envoy_dynamic_module_callback_http_one"};
const char* envoy_dynamic_module_on_program_init(void) { return n[0]; }`
	if err := os.WriteFile(src, []byte(code), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(compiler, "-shared", "-fPIC", "-o", so, src).CombinedOutput(); err != nil {
		t.Fatalf("cc: %v\n%s", err, out)
	}
	return so
}

func TestActivatorChoose(t *testing.T) {
	dir := t.TempDir()
	notELF := filepath.Join(dir, "not-elf.so")
	script := filepath.Join(dir, "envoy.sh")
	for _, f := range []string{notELF, script} {
		if err := os.WriteFile(f, []byte("#!/bin/sh\n"), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	so := fakeModuleSO(t, dir)
	missing := filepath.Join(dir, "absent.so")
	const admin = "127.0.0.1:9901"

	for _, tc := range []struct {
		name     string
		f        activatorFlags
		envoy    string
		eg       bool
		admin    string
		wantKind string
		wantFall modcheck.Reason
		wantErr  string // "" for no error
		wantLog  string // a warning that must be logged ("" for none)
	}{
		{name: "extproc asked", f: activatorFlags{kind: "extproc", explicit: true}, envoy: script, wantKind: "extproc"},
		{name: "unknown kind", f: activatorFlags{kind: "grpc", explicit: true}, envoy: script, wantErr: "want module or extproc"},
		{name: "default with Envoy Gateway", f: activatorFlags{kind: "module", module: so}, eg: true,
			wantKind: "extproc", wantFall: "envoy_gateway"},
		{name: "module asked with Envoy Gateway", f: activatorFlags{kind: "module", module: so, explicit: true}, eg: true,
			wantKind: "module"},
		{name: "module asked with Envoy Gateway, file missing", f: activatorFlags{kind: "module", module: missing, explicit: true}, eg: true,
			wantErr: "make build"},
		{name: "default, module file missing", f: activatorFlags{kind: "module", module: missing}, envoy: script,
			wantKind: "extproc", wantFall: modcheck.ModuleMissing, wantLog: "falling back to ext_proc"},
		{name: "module asked, file missing", f: activatorFlags{kind: "module", module: missing, explicit: true}, envoy: script,
			wantErr: "make build"},
		{name: "default, admin port 0", f: activatorFlags{kind: "module", module: so}, envoy: script, admin: "127.0.0.1:0",
			wantKind: "extproc", wantFall: "admin_port_not_fixed", wantLog: "falling back to ext_proc"},
		{name: "default, module not ELF", f: activatorFlags{kind: "module", module: notELF}, envoy: script,
			wantKind: "extproc", wantFall: modcheck.ModuleInvalid, wantLog: "falling back to ext_proc"},
		{name: "module asked, not ELF", f: activatorFlags{kind: "module", module: notELF, explicit: true}, envoy: script,
			wantErr: "not an ELF shared object"},
		// Envoy cannot be read (a script): unverified.
		{name: "default, Envoy unreadable", f: activatorFlags{kind: "module", module: so}, envoy: script,
			wantKind: "extproc", wantFall: modcheck.EnvoyUnreadable, wantLog: "falling back to ext_proc"},
		{name: "module asked, Envoy unreadable", f: activatorFlags{kind: "module", module: so, explicit: true}, envoy: script,
			wantKind: "module", wantLog: "could not verify"},
		// Envoy is an ELF file exporting no callback (the module itself).
		{name: "default, Envoy without dynamic modules", f: activatorFlags{kind: "module", module: so}, envoy: so,
			wantKind: "extproc", wantFall: modcheck.EnvoyNoDynamicModules, wantLog: "falling back to ext_proc"},
		{name: "module asked, Envoy without dynamic modules", f: activatorFlags{kind: "module", module: so, explicit: true}, envoy: so,
			wantErr: "envoy_no_dynamic_modules"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			core, logs := observer.New(zapcore.InfoLevel)
			a := tc.admin
			if a == "" {
				a = admin
			}
			got, err := tc.f.choose(zap.New(core), chooseEnv{envoy: tc.envoy, eg: tc.eg, adminAddress: a, node: "thaw-local"})
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("choose: %v, want an error containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("choose: %v", err)
			}
			if got.Kind() != tc.wantKind || got.Fallback != tc.wantFall {
				t.Errorf("choose = %s (fallback %q), want %s (fallback %q)", got.Kind(), got.Fallback, tc.wantKind, tc.wantFall)
			}
			warned := logs.FilterLevelExact(zapcore.WarnLevel).FilterMessageSnippet(tc.wantLog).Len() > 0
			if tc.wantLog != "" && !warned {
				t.Errorf("no warning containing %q; logs: %v", tc.wantLog, logs.All())
			}
			if tc.wantFall != "" && tc.wantLog != "" {
				entry := logs.FilterMessageSnippet(tc.wantLog).All()[0]
				if r, _ := entry.ContextMap()["reason"].(string); r != string(tc.wantFall) {
					t.Errorf("fallback warning's reason %q, want %q", r, tc.wantFall)
				}
			}
		})
	}
}

// TestActivatorChoosePinnedEnvoy: with the Envoy `make tools` pins and the
// module `make build` leaves, the default is the module.
func TestActivatorChoosePinnedEnvoy(t *testing.T) {
	envoy, so := filepath.Join("..", "..", ".tools", "bin", "envoy"), filepath.Join("..", "..", "bin", moduleFileName)
	for _, f := range []string{envoy, so} {
		if _, err := os.Stat(f); err != nil {
			t.Skipf("%s not built (`make tools build`): %v", f, err)
		}
	}
	got, err := (&activatorFlags{kind: "module", module: so}).choose(zap.NewNop(), chooseEnv{envoy: envoy, adminAddress: "127.0.0.1:9901", node: "n"})
	if err != nil || got.Module == nil || got.Fallback != "" {
		t.Fatalf("choose = %+v, %v; want the module", got, err)
	}
}

func TestActivatorInfoMetric(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	if err := registerActivatorInfo(reg, activatorChoice{Fallback: modcheck.ModuleMissing}); err != nil {
		t.Fatal(err)
	}
	want := `# HELP thaw_activator_info The activator of thaw's Envoy (activator: module or extproc); fallback_reason says why the default module was not used (empty when it is, or when extproc was asked for).
# TYPE thaw_activator_info gauge
thaw_activator_info{activator="extproc",fallback_reason="module_missing"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "thaw_activator_info"); err != nil {
		t.Error(err)
	}
}
