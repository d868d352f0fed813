// Package extproc adapts the activator to Envoy's ext_proc protocol
// (envoy.service.ext_proc.v3.ExternalProcessor): for each request Envoy sends
// through the internal listener thaw_activator, it reads the revision from
// x-thaw-revision, asks the activator for a backend (holding the request
// inside Envoy while the revision wakes) and answers with dynamic metadata
// naming the backend for the ORIGINAL_DST cluster, or with an immediate
// 4xx/5xx response.
package extproc
