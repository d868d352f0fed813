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

// RevisionSplitsResource is the RevisionSplit resource (plural
// "revisionsplits").
var RevisionSplitsResource = SchemeGroupVersion.WithResource("revisionsplits")

// RevisionSplitKind is the kind of a RevisionSplit object.
const RevisionSplitKind = "RevisionSplit"

var schemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

// AddToScheme registers Revision, RevisionSplit and their lists in a
// scheme.
var AddToScheme = schemeBuilder.AddToScheme

func addKnownTypes(s *runtime.Scheme) error {
	s.AddKnownTypes(SchemeGroupVersion, &Revision{}, &RevisionList{}, &RevisionSplit{}, &RevisionSplitList{})
	metav1.AddToGroupVersion(s, SchemeGroupVersion)
	return nil
}
