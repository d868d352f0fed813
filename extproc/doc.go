// Package extproc adapts the activator to Envoy's ext_proc protocol
// (envoy.service.ext_proc.v3.ExternalProcessor): for each request Envoy sends
// through the internal listener thaw_activator, it reads the revision from
// x-thaw-revision, asks the activator for a backend (holding the request
// inside Envoy with override_message_timeout while the revision wakes) and
// answers with dynamic metadata naming the backend for the ORIGINAL_DST
// cluster, or with an immediate 4xx/5xx response.
//
// The backend's slot is released when Envoy ends the stream. On Envoy 1.40
// that happens at the end of the HTTP request only when the filter's
// processing mode has response_trailer_mode SEND (docs/activator.md,
// "Completion signal"). Drain shuts down without ever closing a held stream
// unanswered.
package extproc
