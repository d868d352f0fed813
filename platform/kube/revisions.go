package kube

import (
	"fmt"
	"slices"
	"time"

	"go.uber.org/zap"
	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"

	"github.com/thaw-dev/thaw/api/v1alpha1"
	"github.com/thaw-dev/thaw/revision"
)

// targetKey names a scale target: namespace, API group, kind and name.
type targetKey struct {
	namespace, group, kind, name string
}

func (t targetKey) String() string {
	gk := schema.GroupKind{Group: t.group, Kind: t.kind}
	return gk.String() + " " + t.namespace + "/" + t.name
}

// targetOf returns the scale target a Revision references (the group is
// parsed from apiVersion; a malformed apiVersion leaves it as written, and
// the REST mapping fails later with a clear error).
func targetOf(r *v1alpha1.Revision) targetKey {
	gv, err := schema.ParseGroupVersion(r.Spec.ScaleTargetRef.APIVersion)
	group := r.Spec.ScaleTargetRef.APIVersion
	if err == nil {
		group = gv.Group
	}
	return targetKey{namespace: r.Namespace, group: group, kind: r.Spec.ScaleTargetRef.Kind, name: r.Spec.ScaleTargetRef.Name}
}

// workloadTarget is the targetKey of an annotated workload.
func workloadTarget(kind Kind, key revision.Key) targetKey {
	return targetKey{namespace: key.Namespace, group: appsv1.GroupName, kind: string(kind), name: key.Name}
}

// targetIndex is the Revision informer index from a Revision to the scale
// target it references (targetKey.String()), so an annotated workload can
// tell it is referenced and the Revisions sharing a target find each other
// from the cache alone.
const targetIndex = "thaw-target"

// indexByTarget is the cache.IndexFunc of targetIndex.
func indexByTarget(obj any) ([]string, error) {
	r, ok := obj.(*v1alpha1.Revision)
	if !ok {
		return nil, nil
	}
	return []string{targetOf(r).String()}, nil
}

// revisionsTargeting returns the live Revisions that reference t, the
// owner first: the Revision created first (the lower name on a tie) owns
// a target; the others are invalid while it exists. The rule depends only
// on the objects, so every thaw replica agrees.
func (p *Platform) revisionsTargeting(t targetKey) []*v1alpha1.Revision {
	if p.revisions == nil {
		return nil
	}
	objs, err := p.revisions.ByIndex(targetIndex, t.String())
	if err != nil {
		return nil
	}
	out := make([]*v1alpha1.Revision, 0, len(objs))
	for _, o := range objs {
		if r, ok := o.(*v1alpha1.Revision); ok && r.DeletionTimestamp == nil {
			out = append(out, r)
		}
	}
	slices.SortFunc(out, func(a, b *v1alpha1.Revision) int {
		if d := a.CreationTimestamp.Compare(b.CreationTimestamp.Time); d != 0 {
			return d
		}
		return cmpString(a.Name, b.Name)
	})
	return out
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// revisionTransform is the Revision informer's TransformFunc: it converts
// the dynamic client's unstructured objects into typed Revisions, so the
// cache holds v1alpha1.Revision values. An object that does not convert
// (a schema older than this thaw) is kept as a Revision carrying only its
// identity and the error, and reported as invalid.
func revisionTransform(obj any) (any, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return obj, nil
	}
	r := &v1alpha1.Revision{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.UnstructuredContent(), r); err != nil {
		bad := &v1alpha1.Revision{ObjectMeta: metav1.ObjectMeta{
			Name: u.GetName(), Namespace: u.GetNamespace(), UID: u.GetUID(), ResourceVersion: u.GetResourceVersion(),
			Generation: u.GetGeneration(), CreationTimestamp: u.GetCreationTimestamp(),
			Annotations: map[string]string{annotationDecodeError: err.Error()},
		}}
		if ts := u.GetDeletionTimestamp(); ts != nil {
			bad.DeletionTimestamp = ts
		}
		return bad, nil
	}
	r.ManagedFields = nil
	return r, nil
}

// annotationDecodeError marks, in the cache only, a Revision whose object
// did not decode; it is never written to the cluster.
const annotationDecodeError = "thaw.dev/internal-decode-error"

var _ cache.TransformFunc = revisionTransform

// revisionsServed reports whether the apiserver serves
// revisions.thaw.dev/v1alpha1.
func (p *Platform) revisionsServed() (bool, error) {
	if p.opts.Discovery == nil {
		return false, nil
	}
	list, err := p.opts.Discovery.ServerResourcesForGroupVersion(v1alpha1.SchemeGroupVersion.String())
	if err != nil {
		if isNotFoundDiscovery(err) {
			return false, nil
		}
		return false, fmt.Errorf("kube: discovery of %s: %w", v1alpha1.SchemeGroupVersion, err)
	}
	for _, r := range list.APIResources {
		if r.Name == v1alpha1.RevisionsResource.Resource {
			return true, nil
		}
	}
	return false, nil
}

// startRevisions decides whether Revisions are watched and, when they are,
// returns their informer (registered with handlers, not started yet) and
// its factory. Both are nil when Revisions are off.
func (p *Platform) startRevisions() (dynamicinformer.DynamicSharedInformerFactory, cache.SharedIndexInformer, error) {
	mode := p.opts.Revisions
	if mode == RevisionsOff || p.opts.Dynamic == nil {
		if mode == RevisionsOn {
			return nil, nil, fmt.Errorf("kube: Revisions on without a dynamic client")
		}
		return nil, nil, nil
	}
	served, err := p.revisionsServed()
	if err != nil && mode == RevisionsOn {
		return nil, nil, err
	}
	if !served {
		if mode == RevisionsOn {
			return nil, nil, fmt.Errorf("kube: the apiserver does not serve %s (install manifests/base/crd)", v1alpha1.RevisionsResource)
		}
		p.log.Info("Revision CRD not served: watching annotated workloads only", zap.Error(err))
		return nil, nil, nil
	}
	factory := dynamicinformer.NewFilteredDynamicSharedInformerFactory(p.opts.Dynamic, 0, p.opts.Namespace, nil)
	inf := factory.ForResource(v1alpha1.RevisionsResource).Informer()
	if err := inf.SetTransform(revisionTransform); err != nil {
		return nil, nil, fmt.Errorf("kube: revision transform: %w", err)
	}
	if err := inf.AddIndexers(cache.Indexers{targetIndex: indexByTarget}); err != nil {
		return nil, nil, fmt.Errorf("kube: revision index: %w", err)
	}
	_, err = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { p.onRevision(nil, obj) },
		UpdateFunc: p.onRevision,
		DeleteFunc: func(obj any) { p.onRevision(nil, obj) },
	})
	if err != nil {
		return nil, nil, fmt.Errorf("kube: revision handler: %w", err)
	}
	p.revisions = inf.GetIndexer()
	return factory, inf, nil
}

// onRevision queues the Revision's key and, before and after the change,
// the workload of its target's name (its annotations count again, or stop
// counting, when a Revision starts or stops referencing it) and the other
// Revisions of that target (ownership may move).
func (p *Platform) onRevision(oldObj, obj any) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	for _, o := range []any{oldObj, obj} {
		r, ok := o.(*v1alpha1.Revision)
		if !ok {
			continue
		}
		p.queue.Add(revision.Key{Namespace: r.Namespace, Name: r.Name})
		t := targetOf(r)
		if t.group == appsv1.GroupName {
			p.queue.Add(revision.Key{Namespace: t.namespace, Name: t.name})
		}
		for _, other := range p.revisionsTargeting(t) {
			p.queue.Add(revision.Key{Namespace: other.Namespace, Name: other.Name})
		}
	}
}

// getRevision returns the cached Revision of key, or nil.
func (p *Platform) getRevision(key revision.Key) *v1alpha1.Revision {
	if p.revisions == nil {
		return nil
	}
	obj, ok, err := p.revisions.GetByKey(key.Namespace + "/" + key.Name)
	if err != nil || !ok {
		return nil
	}
	r, _ := obj.(*v1alpha1.Revision)
	return r
}

// revisionKeys lists the keys of every cached Revision.
func (p *Platform) revisionKeys() []revision.Key {
	if p.revisions == nil {
		return nil
	}
	var keys []revision.Key
	for _, obj := range p.revisions.List() {
		if r, ok := obj.(*v1alpha1.Revision); ok {
			keys = append(keys, revision.Key{Namespace: r.Namespace, Name: r.Name})
		}
	}
	return keys
}

// revisionsSelecting returns the Revisions of a pod's namespace whose pod
// selector matches the pod's labels.
func (p *Platform) revisionsSelecting(ns string, podLabels map[string]string) []revision.Key {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []revision.Key
	for key, sel := range p.selectors[ns] {
		if sel.Matches(labels.Set(podLabels)) {
			out = append(out, key)
		}
	}
	return out
}

// staticMapper maps the apps/v1 kinds that have a /scale subresource, for
// platforms built without a RESTConfig (unit tests).
func staticMapper() meta.RESTMapper {
	m := meta.NewDefaultRESTMapper([]schema.GroupVersion{appsv1.SchemeGroupVersion})
	for _, k := range []string{"Deployment", "StatefulSet", "ReplicaSet"} {
		m.Add(appsv1.SchemeGroupVersion.WithKind(k), meta.RESTScopeNamespace)
	}
	return m
}

// isNotFoundDiscovery reports whether a discovery error means the group
// version is not served.
func isNotFoundDiscovery(err error) bool {
	return err != nil && (apierrors.IsNotFound(err) || meta.IsNoMatchError(err))
}

// refreshTargets queues the Revisions whose view of their scale target is
// older than Options.ScaleRefresh: targets of kinds thaw does not watch
// change unseen. Deployment and StatefulSet targets are skipped when every
// one is watched (no LabelSelector): their spec changes mark them stale.
func (p *Platform) refreshTargets(now time.Time) {
	p.mu.Lock()
	var due []revision.Key
	for key, st := range p.revs {
		if st.crd == nil || now.Sub(st.crd.fetched) < p.opts.ScaleRefresh {
			continue
		}
		t := st.crd.target
		watched := p.opts.LabelSelector == "" && t.group == appsv1.GroupName &&
			(t.kind == string(KindDeployment) || t.kind == string(KindStatefulSet))
		if !watched || st.crd.targetErr != nil {
			due = append(due, key)
		}
	}
	p.mu.Unlock()
	p.enqueue(due)
}
