package modcheck

import (
	"bytes"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strings"
)

// ABIVersion is the dynamic-module ABI version the activator module is
// written against (module/activator/abi.go, thaw_abi_version; Envoy 1.40's
// source/extensions/dynamic_modules/abi/abi_version.h). A test keeps the
// two in step.
const ABIVersion = "v0.2.0"

// Reason says, as a short stable token (a metric label), why the module
// cannot run or could not be verified.
type Reason string

// Reasons Check reports.
const (
	// ModuleMissing: the module file does not exist or cannot be opened.
	ModuleMissing Reason = "module_missing"
	// ModuleInvalid: the file is not an ELF shared object for Envoy's
	// machine exporting the dynamic-module entry point, or names no Envoy
	// callback (not thaw's activator module).
	ModuleInvalid Reason = "module_invalid"
	// EnvoyUnreadable: the Envoy binary is not an ELF file (a wrapper
	// script, another platform's format): nothing could be checked.
	EnvoyUnreadable Reason = "envoy_unreadable"
	// EnvoyNoDynamicModules: Envoy exports no dynamic-module HTTP callback
	// (built without the dynamic-modules HTTP filter, or older than it).
	EnvoyNoDynamicModules Reason = "envoy_no_dynamic_modules"
	// EnvoyMissingCallbacks: Envoy exports dynamic-module callbacks but not
	// every one the module calls (another ABI).
	EnvoyMissingCallbacks Reason = "envoy_missing_callbacks"
	// ABIVersionNotFound: Envoy's read-only data does not hold ABIVersion.
	ABIVersionNotFound Reason = "abi_version_not_found"
)

// Error is why the module cannot run in an Envoy (Unverified false: the
// module would fail to load or misbehave) or why that could not be
// checked (Unverified true: the module may still load).
type Error struct {
	Reason     Reason
	Unverified bool
	Err        error
}

func (e *Error) Error() string { return fmt.Sprintf("%s: %v", e.Reason, e.Err) }
func (e *Error) Unwrap() error { return e.Err }

// Check reports whether Envoy binary envoy can load the activator module
// at path module: nil when every check passes, else an *Error. It reads
// both files (ELF) and runs neither.
func Check(envoy, module string) error {
	mod, err := readModule(module)
	if err != nil {
		return err
	}
	return checkEnvoy(envoy, mod)
}

// moduleInfo is what Check needs of the module: its machine and the
// callbacks it looks up in Envoy.
type moduleInfo struct {
	machine   elf.Machine
	callbacks []string
}

// entryPoint is the hook Envoy calls first in every dynamic module.
const entryPoint = "envoy_dynamic_module_on_program_init"

// callbackRE matches one callback name in the module's C strings.
var callbackRE = regexp.MustCompile(`envoy_dynamic_module_callback_[A-Za-z0-9_]+\x00`)

func readModule(path string) (*moduleInfo, error) {
	if _, err := os.Stat(path); err != nil {
		return nil, &Error{Reason: ModuleMissing, Err: err}
	}
	f, err := elf.Open(path)
	if err != nil {
		return nil, &Error{Reason: ModuleInvalid, Err: fmt.Errorf("%s: not an ELF shared object: %w", path, err)}
	}
	defer f.Close()
	if f.Type != elf.ET_DYN {
		return nil, &Error{Reason: ModuleInvalid, Err: fmt.Errorf("%s: ELF type %v, want a shared object (ET_DYN)", path, f.Type)}
	}
	syms, err := f.DynamicSymbols()
	if err != nil {
		return nil, &Error{Reason: ModuleInvalid, Err: fmt.Errorf("%s: dynamic symbols: %w", path, err)}
	}
	if !slices.ContainsFunc(syms, func(s elf.Symbol) bool { return s.Name == entryPoint && s.Section != elf.SHN_UNDEF }) {
		return nil, &Error{Reason: ModuleInvalid, Err: fmt.Errorf("%s does not export %s: not a dynamic module", path, entryPoint)}
	}
	ro := f.Section(".rodata")
	if ro == nil {
		return nil, &Error{Reason: ModuleInvalid, Err: fmt.Errorf("%s has no .rodata section", path)}
	}
	data, err := ro.Data()
	if err != nil {
		return nil, &Error{Reason: ModuleInvalid, Err: fmt.Errorf("%s: read .rodata: %w", path, err)}
	}
	cbs := callbackNames(data)
	if len(cbs) == 0 {
		return nil, &Error{Reason: ModuleInvalid, Err: fmt.Errorf("%s names no Envoy callback: not thaw's activator module", path)}
	}
	return &moduleInfo{machine: f.Machine, callbacks: cbs}, nil
}

// callbackNames returns the NUL-terminated envoy_dynamic_module_callback_*
// names in data, sorted, without duplicates.
func callbackNames(data []byte) []string {
	var out []string
	for _, m := range callbackRE.FindAll(data, -1) {
		out = append(out, string(m[:len(m)-1]))
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func checkEnvoy(path string, mod *moduleInfo) error {
	f, err := elf.Open(path)
	if err != nil {
		return &Error{Reason: EnvoyUnreadable, Unverified: true, Err: fmt.Errorf("read Envoy binary %s as ELF: %w", path, err)}
	}
	defer f.Close()
	if f.Machine != mod.machine {
		return &Error{Reason: ModuleInvalid, Err: fmt.Errorf("module built for %v, Envoy %s is %v", mod.machine, path, f.Machine)}
	}
	syms, err := f.DynamicSymbols()
	if err != nil && !errors.Is(err, elf.ErrNoSymbols) {
		return &Error{Reason: EnvoyUnreadable, Unverified: true, Err: fmt.Errorf("envoy binary %s: dynamic symbols: %w", path, err)}
	}
	exported := map[string]bool{}
	anyHTTP := false
	for _, s := range syms {
		if s.Section == elf.SHN_UNDEF || elf.ST_TYPE(s.Info) != elf.STT_FUNC {
			continue
		}
		if strings.HasPrefix(s.Name, "envoy_dynamic_module_callback_") {
			exported[s.Name] = true
			anyHTTP = anyHTTP || strings.HasPrefix(s.Name, "envoy_dynamic_module_callback_http_")
		}
	}
	var missing []string
	for _, cb := range mod.callbacks {
		if !exported[cb] {
			missing = append(missing, cb)
		}
	}
	switch {
	case !anyHTTP:
		return &Error{Reason: EnvoyNoDynamicModules,
			Err: fmt.Errorf("envoy binary %s exports no dynamic-module HTTP callback: built without the dynamic_modules HTTP filter", path)}
	case len(missing) > 0:
		return &Error{Reason: EnvoyMissingCallbacks,
			Err: fmt.Errorf("envoy binary %s does not export %s (the module is written for dynamic-module ABI %s)", path, strings.Join(missing, ", "), ABIVersion)}
	}
	ro := f.Section(".rodata")
	if ro == nil {
		return &Error{Reason: ABIVersionNotFound, Unverified: true, Err: fmt.Errorf("envoy binary %s has no .rodata section", path)}
	}
	found, err := containsCString(ro.Open(), ABIVersion)
	if err != nil {
		return &Error{Reason: EnvoyUnreadable, Unverified: true, Err: fmt.Errorf("envoy binary %s: read .rodata: %w", path, err)}
	}
	if !found {
		return &Error{Reason: ABIVersionNotFound, Unverified: true,
			Err: fmt.Errorf("envoy binary %s does not hold dynamic-module ABI version %q (the module's); Envoy may load it with a warning", path, ABIVersion)}
	}
	return nil
}

// containsCString reports whether r holds s as a whole C string (NUL
// before and after), reading it in chunks.
func containsCString(r io.Reader, s string) (bool, error) {
	want := []byte("\x00" + s + "\x00")
	buf := make([]byte, 1<<20+len(want))
	keep := 0
	for {
		n, err := io.ReadFull(r, buf[keep:])
		n += keep
		if bytes.Contains(buf[:n], want) {
			return true, nil
		}
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		keep = copy(buf, buf[n-len(want)+1:n])
	}
}
