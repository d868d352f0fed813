//go:build cgo

package main

/*
#include <stddef.h>
#include <stdint.h>
*/
import "C"

// Hooks Envoy requires but the activator does not act on: every one lets
// the stream go on. Request bodies never reach Go code: while a request is
// held its headers stop all iteration (body buffered by Envoy with
// watermarks), and after it resumes the body passes straight through.

//export envoy_dynamic_module_on_http_filter_request_body
func envoy_dynamic_module_on_http_filter_request_body(a1, a2 uintptr, a3 bool) int32 {
	return statusContinue
}

//export envoy_dynamic_module_on_http_filter_request_trailers
func envoy_dynamic_module_on_http_filter_request_trailers(a1, a2 uintptr) int32 {
	return statusContinue
}

//export envoy_dynamic_module_on_http_filter_response_body
func envoy_dynamic_module_on_http_filter_response_body(a1, a2 uintptr, a3 bool) int32 {
	return statusContinue
}

//export envoy_dynamic_module_on_http_filter_response_trailers
func envoy_dynamic_module_on_http_filter_response_trailers(a1, a2 uintptr) int32 {
	return statusContinue
}

//export envoy_dynamic_module_on_http_filter_http_callout_done
func envoy_dynamic_module_on_http_filter_http_callout_done(a1, a2 uintptr, a3 uint64, a4 int32, a5 uintptr, a6 C.size_t, a7 uintptr, a8 C.size_t) {
}

//export envoy_dynamic_module_on_http_filter_http_stream_headers
func envoy_dynamic_module_on_http_filter_http_stream_headers(a1, a2 uintptr, a3 uint64, a4 uintptr, a5 C.size_t, a6 bool) {
}

//export envoy_dynamic_module_on_http_filter_http_stream_data
func envoy_dynamic_module_on_http_filter_http_stream_data(a1, a2 uintptr, a3 uint64, a4 uintptr, a5 C.size_t, a6 bool) {
}

//export envoy_dynamic_module_on_http_filter_http_stream_trailers
func envoy_dynamic_module_on_http_filter_http_stream_trailers(a1, a2 uintptr, a3 uint64, a4 uintptr, a5 C.size_t) {
}

//export envoy_dynamic_module_on_http_filter_http_stream_complete
func envoy_dynamic_module_on_http_filter_http_stream_complete(a1, a2 uintptr, a3 uint64) {}

//export envoy_dynamic_module_on_http_filter_http_stream_reset
func envoy_dynamic_module_on_http_filter_http_stream_reset(a1, a2 uintptr, a3 uint64, a4 int32) {}

//export envoy_dynamic_module_on_http_filter_downstream_above_write_buffer_high_watermark
func envoy_dynamic_module_on_http_filter_downstream_above_write_buffer_high_watermark(a1, a2 uintptr) {
}

//export envoy_dynamic_module_on_http_filter_downstream_below_write_buffer_low_watermark
func envoy_dynamic_module_on_http_filter_downstream_below_write_buffer_low_watermark(a1, a2 uintptr) {
}
