// Package modcheck tells, before Envoy starts, whether an Envoy binary can
// load thaw's activator module (the Go dynamic module built from
// module/activator, bin/thaw-activator.so), so `thaw local` can choose its
// activator: the module by default, ext_proc when the module cannot run.
//
// It reads both files as ELF with debug/elf and loads neither: no dlopen,
// no process started, no code of the module run in thaw. The checks, each
// a condition the module itself needs:
//
//   - the module is an ELF shared object for Envoy's machine that exports
//     the dynamic-module entry point (envoy_dynamic_module_on_program_init);
//   - Envoy exports, as defined dynamic functions, every
//     envoy_dynamic_module_callback_* the module looks up when Envoy loads
//     it (the module's own list, read from the C strings of its .rodata).
//     An Envoy built without the dynamic-modules HTTP filter exports none
//     of them; one built for another ABI lacks some;
//   - Envoy's .rodata holds the ABI version string the module was written
//     against (ABIVersion). Envoy 1.40 only warns on a mismatch, so this is
//     the one check that cannot be definite: a missing string is reported
//     as unverified, not as unavailable.
//
// Reading costs one pass over Envoy's .rodata (about 10 MB for Envoy 1.40)
// and its dynamic symbol table: milliseconds.
package modcheck
