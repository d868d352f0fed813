// Command activator is thaw's activator as an Envoy dynamic module: built
// with `go build -buildmode=c-shared` into bin/thaw-activator.so and loaded
// by Envoy's dynamic_modules HTTP filter on revision routes (per-route
// config names the revision). It places each request on a backend with a
// free slot (set_upstream_override_host, strict), holds it otherwise
// (paused inside Envoy, resumed through the filter scheduler), and answers
// overflow and hold timeout with the ext_proc activator's 503s. State
// comes from thaw's state stream; counts and pokes go back to thaw.
//
// The binding is thaw's own: abi.go declares only the types and callbacks
// this module uses, written against the dynamic-module ABI of the pinned
// Envoy (source/extensions/dynamic_modules/abi/abi.h, ABI version in
// abiVersion). Callbacks are resolved with dlsym when Envoy loads the
// module, so a module loaded by an Envoy that lacks one refuses to load
// with a message naming it, instead of crashing on first use.
//
// Rules every entry point follows: it recovers panics (the request gets a
// 503), never blocks an Envoy thread (held requests are parked and resumed
// by the scheduler), hands C no Go pointer (filters are slab indices,
// configs runtime/cgo handles), and copies Envoy-owned buffers before it
// returns.
package main
