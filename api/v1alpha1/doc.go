// Package v1alpha1 holds thaw's Kubernetes API, group thaw.dev, version
// v1alpha1: the Revision custom resource. The CRD under
// manifests/base/crd/ and zz_generated.deepcopy.go are generated from these
// types by controller-gen (`make generate`); `make verify-generate` fails
// when the committed files are stale.
//
// +kubebuilder:object:generate=true
// +groupName=thaw.dev
package v1alpha1
