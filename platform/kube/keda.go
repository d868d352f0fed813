package kube

import (
	"context"
	"fmt"

	"go.uber.org/zap"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"

	"github.com/thaw-dev/thaw/revision"
)

// ScaledObjectsResource is KEDA's ScaledObject (keda.sh/v1alpha1). thaw
// reads its metadata and spec.scaleTargetRef only, through the dynamic
// client: no KEDA Go module is needed.
var ScaledObjectsResource = schema.GroupVersionResource{Group: "keda.sh", Version: "v1alpha1", Resource: "scaledobjects"}

// scaledObject is what the informer keeps of a ScaledObject: its identity
// and the workload it scales.
type scaledObject struct {
	metav1.ObjectMeta
	target targetKey
}

// GetObjectKind and DeepCopyObject make a scaledObject a runtime.Object,
// as the informer's store expects.
func (s *scaledObject) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }

// DeepCopyObject: see GetObjectKind.
func (s *scaledObject) DeepCopyObject() runtime.Object {
	c := &scaledObject{target: s.target}
	s.ObjectMeta.DeepCopyInto(&c.ObjectMeta)
	return c
}

var _ runtime.Object = (*scaledObject)(nil)

// scaledObjectTransform reduces a ScaledObject to a *scaledObject. KEDA's
// scaleTargetRef defaults apiVersion to apps/v1 and kind to Deployment;
// thaw reads it the same way.
func scaledObjectTransform(obj any) (any, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return obj, nil
	}
	ref, _, _ := unstructured.NestedStringMap(u.Object, "spec", "scaleTargetRef")
	apiVersion, kind := ref["apiVersion"], ref["kind"]
	if apiVersion == "" {
		apiVersion = "apps/v1"
	}
	if kind == "" {
		kind = "Deployment"
	}
	group := apiVersion
	if gv, err := schema.ParseGroupVersion(apiVersion); err == nil {
		group = gv.Group
	}
	return &scaledObject{
		ObjectMeta: metav1.ObjectMeta{Name: u.GetName(), Namespace: u.GetNamespace(), UID: u.GetUID(),
			ResourceVersion: u.GetResourceVersion(), DeletionTimestamp: u.GetDeletionTimestamp()},
		target: targetKey{namespace: u.GetNamespace(), group: group, kind: kind, name: ref["name"]},
	}, nil
}

var _ cache.TransformFunc = scaledObjectTransform

// indexByScaledObjectTarget is the hpaTargetIndex of the ScaledObject
// informer.
func indexByScaledObjectTarget(obj any) ([]string, error) {
	s, ok := obj.(*scaledObject)
	if !ok || s.target.name == "" {
		return nil, nil
	}
	return []string{s.target.String()}, nil
}

// startScaledObjects sets up the ScaledObject informer (not started) when
// the apiserver serves KEDA's CRD and thaw may list ScaledObjects; both
// results are nil otherwise (no KEDA: nothing to watch; installing KEDA
// later needs a thaw restart to see its ScaledObjects, while KEDA's own
// HPAs are seen at once).
func (p *Platform) startScaledObjects(ctx context.Context) (dynamicinformer.DynamicSharedInformerFactory, cache.SharedIndexInformer, error) {
	if !p.optional(ctx, ScaledObjectsResource) {
		return nil, nil, nil
	}
	factory := dynamicinformer.NewFilteredDynamicSharedInformerFactory(p.opts.Dynamic, 0, p.opts.Namespace, nil)
	inf := factory.ForResource(ScaledObjectsResource).Informer()
	if err := inf.SetTransform(scaledObjectTransform); err != nil {
		return nil, nil, fmt.Errorf("kube: ScaledObject transform: %w", err)
	}
	if err := inf.AddIndexers(cache.Indexers{hpaTargetIndex: indexByScaledObjectTarget}); err != nil {
		return nil, nil, fmt.Errorf("kube: ScaledObject index: %w", err)
	}
	_, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { p.onScaledObject(nil, obj) }, UpdateFunc: p.onScaledObject,
		DeleteFunc: func(obj any) { p.onScaledObject(nil, obj) },
	})
	if err != nil {
		return nil, nil, fmt.Errorf("kube: ScaledObject handler: %w", err)
	}
	p.scaledObjects = inf.GetIndexer()
	p.log.Info("watching KEDA ScaledObjects: a workload one of them scales is left alone")
	return factory, inf, nil
}

// onScaledObject queues the revisions whose workload an added, changed or
// removed ScaledObject targets (before and after a change).
func (p *Platform) onScaledObject(old, obj any) {
	for _, o := range []any{old, obj} {
		if d, ok := o.(cache.DeletedFinalStateUnknown); ok {
			o = d.Obj
		}
		s, ok := o.(*scaledObject)
		if !ok || s.target.name == "" {
			continue
		}
		p.enqueueTarget(s.target)
	}
}

// enqueueTarget queues the annotated workload of t's name and the
// Revisions that reference t.
func (p *Platform) enqueueTarget(t targetKey) {
	keys := []revision.Key{{Namespace: t.namespace, Name: t.name}}
	for _, r := range p.revisionsTargeting(t) {
		keys = append(keys, revision.Key{Namespace: r.Namespace, Name: r.Name})
	}
	p.enqueue(keys)
}

// scaledObjectsOf names the ScaledObjects that scale t ("" when none or
// not watched).
func (p *Platform) scaledObjectOf(t targetKey) string {
	if p.scaledObjects == nil {
		return ""
	}
	objs, err := p.scaledObjects.ByIndex(hpaTargetIndex, t.String())
	if err != nil || len(objs) == 0 {
		return ""
	}
	s := objs[0].(*scaledObject)
	if len(objs) > 1 {
		p.log.Debug("several ScaledObjects scale one workload", zap.String("target", t.String()), zap.Int("count", len(objs)))
	}
	return "KEDA ScaledObject " + s.Namespace + "/" + s.Name
}
