// Package revisionspec translates a thaw.dev/v1alpha1 Revision into the
// revision.Spec every other source (annotations, the local file) produces
// for the same settings, through one parser and one set of ranges
// (revision.ParseSettingsWithin). platform/kube uses it for Revisions it
// reconciles and egext for Revisions Envoy Gateway hands to its hooks, so
// both paths give a Revision the same timeouts, protocol and limits.
package revisionspec
