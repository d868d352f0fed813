package modcheck

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
	"testing/iotest"
)

func TestCallbackNames(t *testing.T) {
	for _, tc := range []struct {
		name string
		data string
		want []string
	}{
		{"none", "hello\x00world\x00", nil},
		{"C strings, sorted, deduplicated",
			"x\x00envoy_dynamic_module_callback_http_b\x00envoy_dynamic_module_callback_a\x00envoy_dynamic_module_callback_http_b\x00",
			[]string{"envoy_dynamic_module_callback_a", "envoy_dynamic_module_callback_http_b"}},
		// A Go string is not NUL-terminated: a name run into other text is
		// not one the module looks up.
		{"not NUL-terminated", "see envoy_dynamic_module_callback_http_x for details", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := callbackNames([]byte(tc.data)); !slices.Equal(got, tc.want) {
				t.Errorf("callbackNames = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestContainsCString(t *testing.T) {
	// The string straddles the 1 MiB chunk boundary; the reader returns
	// half of what is asked each time.
	data := bytes.Repeat([]byte{'a'}, 3<<20)
	copy(data[1<<20-3:], "\x00"+ABIVersion+"\x00")
	if ok, err := containsCString(iotest.HalfReader(bytes.NewReader(data)), ABIVersion); !ok || err != nil {
		t.Errorf("containsCString across a chunk boundary = %v, %v; want true", ok, err)
	}
	if ok, _ := containsCString(bytes.NewReader([]byte("x"+ABIVersion+"\x00")), ABIVersion); ok {
		t.Error("found a string not preceded by NUL")
	}
	if _, err := containsCString(iotest.ErrReader(errors.New("boom")), ABIVersion); err == nil {
		t.Error("read error not returned")
	}
}

// cc compiles C source into a shared object in dir (skips the test when
// the machine has no C compiler: cgo builds of the module need one).
func cc(t *testing.T, dir, name, src string) string {
	t.Helper()
	compiler, err := exec.LookPath("cc")
	if err != nil {
		t.Skipf("no C compiler: %v", err)
	}
	c := filepath.Join(dir, name+".c")
	if err := os.WriteFile(c, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	so := filepath.Join(dir, name+".so")
	if out, err := exec.Command(compiler, "-shared", "-fPIC", "-O0", "-o", so, c).CombinedOutput(); err != nil {
		t.Fatalf("cc %s: %v\n%s", name, err, out)
	}
	return so
}

// fakeModule looks up two callbacks, as the real module's C array does.
const fakeModule = `
const char* const names[] = {"envoy_dynamic_module_callback_http_one", "envoy_dynamic_module_callback_http_two"};
const char* envoy_dynamic_module_on_program_init(void) { return names[0]; }
`

func TestCheck(t *testing.T) {
	dir := t.TempDir()
	module := cc(t, dir, "module", fakeModule)
	noEntry := cc(t, dir, "noentry", `const char* const n[] = {"envoy_dynamic_module_callback_http_one"}; const char* f(void) { return n[0]; }`)
	noNames := cc(t, dir, "nonames", `const char* envoy_dynamic_module_on_program_init(void) { return "x"; }`)
	envoyNone := cc(t, dir, "envoy-none", `int main_loop(void) { return 0; }`)
	envoyPart := cc(t, dir, "envoy-part", `void envoy_dynamic_module_callback_http_one(void) {}`)
	envoyNoABI := cc(t, dir, "envoy-noabi", `void envoy_dynamic_module_callback_http_one(void) {}
void envoy_dynamic_module_callback_http_two(void) {}
const char* version(void) { return "1.40.0"; }`)
	envoyOK := cc(t, dir, "envoy-ok", `void envoy_dynamic_module_callback_http_one(void) {}
void envoy_dynamic_module_callback_http_two(void) {}
const char* abi_version(void) { return "x\0`+ABIVersion+`"; }`)
	script := filepath.Join(dir, "envoy.sh")
	if err := os.WriteFile(script, []byte("#!/bin/sh\nexec envoy \"$@\"\n"), 0o700); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		name, envoy, module string
		want                Reason // "" for nil
		unverified          bool
		inErr               string
	}{
		{"loadable", envoyOK, module, "", false, ""},
		{"module missing", envoyOK, filepath.Join(dir, "absent.so"), ModuleMissing, false, "absent.so"},
		{"module not ELF", envoyOK, script, ModuleInvalid, false, "not an ELF"},
		{"module without the entry point", envoyOK, noEntry, ModuleInvalid, false, entryPoint},
		{"module naming no callback", envoyOK, noNames, ModuleInvalid, false, "names no Envoy callback"},
		{"Envoy is a script", script, module, EnvoyUnreadable, true, "ELF"},
		{"Envoy without dynamic modules", envoyNone, module, EnvoyNoDynamicModules, false, "dynamic_modules"},
		{"Envoy lacking a callback", envoyPart, module, EnvoyMissingCallbacks, false, "envoy_dynamic_module_callback_http_two"},
		{"Envoy without the ABI version", envoyNoABI, module, ABIVersionNotFound, true, ABIVersion},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Check(tc.envoy, tc.module)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("Check = %v, want nil", err)
				}
				return
			}
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("Check = %v, want an *Error with reason %s", err, tc.want)
			}
			if e.Reason != tc.want || e.Unverified != tc.unverified || !strings.Contains(err.Error(), tc.inErr) {
				t.Errorf("Check = %v (reason %s, unverified %v), want reason %s, unverified %v, naming %q",
					err, e.Reason, e.Unverified, tc.want, tc.unverified, tc.inErr)
			}
		})
	}
}

// repoRoot is the repository root (this file is internal/modcheck).
func repoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// TestABIVersionIsTheModules: ABIVersion is the version string the module
// returns to Envoy.
func TestABIVersionIsTheModules(t *testing.T) {
	src, err := os.ReadFile(filepath.Join(repoRoot(), "module", "activator", "abi.go"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`thaw_abi_version\[\] = "([^"]+)"`).FindSubmatch(src)
	if m == nil || string(m[1]) != ABIVersion {
		t.Fatalf("module/activator/abi.go declares ABI version %q, modcheck.ABIVersion is %q", m, ABIVersion)
	}
}

// TestPinnedEnvoyLoadsBuiltModule: the Envoy `make tools` pins passes every
// check with the module `make build` leaves, and the callbacks read from
// the module's .rodata are exactly the ones its source resolves.
func TestPinnedEnvoyLoadsBuiltModule(t *testing.T) {
	root := repoRoot()
	envoy, so := filepath.Join(root, ".tools", "bin", "envoy"), filepath.Join(root, "bin", "thaw-activator.so")
	for _, f := range []string{envoy, so} {
		if _, err := os.Stat(f); err != nil {
			t.Skipf("%s not built (`make tools build`): %v", f, err)
		}
	}
	if err := Check(envoy, so); err != nil {
		t.Fatalf("Check(pinned Envoy, built module) = %v", err)
	}
	mod, err := readModule(so)
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile(filepath.Join(root, "module", "activator", "abi.go"))
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, m := range regexp.MustCompile(`"(envoy_dynamic_module_callback_\w+)"`).FindAllSubmatch(src, -1) {
		want = append(want, string(m[1]))
	}
	slices.Sort(want)
	if want = slices.Compact(want); !slices.Equal(mod.callbacks, want) {
		t.Errorf("callbacks read from %s %q, its source resolves %q: a module built from older source (run `make build`), or the reading is wrong",
			so, mod.callbacks, want)
	}
}
