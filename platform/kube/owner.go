package kube

import (
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/thaw-dev/thaw/revision"
)

// ownerIndex is the Pod informer index from a pod to the revision key of
// the workload that owns it, so a pod event touches one revision and a
// reconcile lists only that workload's pods, whatever the namespace holds
// (1,000 revisions of 3 pods in one namespace: see BenchmarkReconcile).
const ownerIndex = "thaw-owner"

// podOwner returns the key (namespace/name) of the Deployment or
// StatefulSet that controls a pod, from its controller owner reference
// alone:
//
//   - owner kind StatefulSet: the StatefulSet's name;
//   - owner kind ReplicaSet: the Deployment's name, which is the ReplicaSet
//     name without its "-<pod-template-hash>" suffix (the Deployment
//     controller names ReplicaSets "<deployment>-<hash>" and copies the hash
//     into the pod label pod-template-hash).
//
// ok is false for pods without such an owner (bare pods, Jobs, DaemonSets,
// ReplicaSets not made by a Deployment). Backends are the pods a revision's
// workload owns AND its selector matches.
func podOwner(p *corev1.Pod) (Kind, revision.Key, bool) {
	ref := metav1.GetControllerOfNoCopy(p)
	if ref == nil || !strings.HasPrefix(ref.APIVersion, appsv1.GroupName+"/") {
		return "", revision.Key{}, false
	}
	switch ref.Kind {
	case "StatefulSet":
		return KindStatefulSet, revision.Key{Namespace: p.Namespace, Name: ref.Name}, true
	case "ReplicaSet":
		hash := p.Labels[appsv1.DefaultDeploymentUniqueLabelKey]
		if hash == "" || !strings.HasSuffix(ref.Name, "-"+hash) {
			return "", revision.Key{}, false
		}
		return KindDeployment, revision.Key{Namespace: p.Namespace, Name: strings.TrimSuffix(ref.Name, "-"+hash)}, true
	default:
		return "", revision.Key{}, false
	}
}

// ownerIndexValue is the ownerIndex value of a workload: kind and key, so
// a Deployment and a StatefulSet of one name never share pods.
func ownerIndexValue(kind Kind, key revision.Key) string {
	return string(kind) + "/" + key.String()
}

// indexByOwner is the cache.IndexFunc of ownerIndex.
func indexByOwner(obj any) ([]string, error) {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return nil, nil
	}
	if kind, k, ok := podOwner(p); ok {
		return []string{ownerIndexValue(kind, k)}, nil
	}
	return nil, nil
}

var _ cache.IndexFunc = indexByOwner
