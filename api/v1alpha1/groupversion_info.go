package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Group and version of thaw's API.
const (
	GroupName = "thaw.dev"
	Version   = "v1alpha1"
)

// SchemeGroupVersion is thaw.dev/v1alpha1.
var SchemeGroupVersion = schema.GroupVersion{Group: GroupName, Version: Version}

// RevisionsResource is the Revision resource (plural "revisions").
var RevisionsResource = SchemeGroupVersion.WithResource("revisions")

// RevisionKind is the kind of a Revision object.
const RevisionKind = "Revision"

var schemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

// AddToScheme registers Revision and RevisionList in a scheme.
var AddToScheme = schemeBuilder.AddToScheme

func addKnownTypes(s *runtime.Scheme) error {
	s.AddKnownTypes(SchemeGroupVersion, &Revision{}, &RevisionList{})
	metav1.AddToGroupVersion(s, SchemeGroupVersion)
	return nil
}
