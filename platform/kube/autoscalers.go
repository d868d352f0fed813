package kube

import (
	"errors"
	"fmt"
	"strings"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"

	"github.com/thaw-dev/thaw/revision"
)

// ErrOtherAutoscaler marks a revision whose workload another autoscaler
// (a HorizontalPodAutoscaler or a KEDA ScaledObject) also scales: both would write /scale and
// undo each other's decisions, so thaw leaves the workload alone (the
// revision is invalid: not scaled, not routed) until the other autoscaler
// is removed. docs/kubernetes.md tells how to hand a workload over.
var ErrOtherAutoscaler = errors.New("scaled by another autoscaler")

// hpaTargetIndex indexes HorizontalPodAutoscalers by their scale target
// (targetKey.String()).
const hpaTargetIndex = "thaw-hpa-target"

// hpaTarget is the scale target of h.
func hpaTarget(h *autoscalingv2.HorizontalPodAutoscaler) targetKey {
	gv, err := schema.ParseGroupVersion(h.Spec.ScaleTargetRef.APIVersion)
	group := h.Spec.ScaleTargetRef.APIVersion
	if err == nil {
		group = gv.Group
	}
	return targetKey{namespace: h.Namespace, group: group, kind: h.Spec.ScaleTargetRef.Kind, name: h.Spec.ScaleTargetRef.Name}
}

func indexByHPATarget(obj any) ([]string, error) {
	h, ok := obj.(*autoscalingv2.HorizontalPodAutoscaler)
	if !ok {
		return nil, nil
	}
	return []string{hpaTarget(h).String()}, nil
}

// otherAutoscaler returns an error wrapping ErrOtherAutoscaler and naming
// what else scales t: a KEDA ScaledObject (when KEDA's CRD is served)
// and/or a HorizontalPodAutoscaler (KEDA drives one of its own,
// keda-hpa-<name>), or nil. field is the field the error names
// ("spec.scaleTargetRef", or "workload" for annotations).
func (p *Platform) otherAutoscaler(t targetKey, field string) error {
	var who []string
	if so := p.scaledObjectOf(t); so != "" {
		who = append(who, so)
	}
	if p.hpas != nil {
		if objs, err := p.hpas.ByIndex(hpaTargetIndex, t.String()); err == nil && len(objs) > 0 {
			h := objs[0].(*autoscalingv2.HorizontalPodAutoscaler)
			who = append(who, "HorizontalPodAutoscaler "+h.Namespace+"/"+h.Name)
		}
	}
	if len(who) == 0 {
		return nil
	}
	return errors.Join(ErrOtherAutoscaler, &revision.FieldError{Field: field, Value: t.String(),
		Allowed: fmt.Sprintf("a workload no other autoscaler scales (%s scales it: thaw does not)", strings.Join(who, " and "))})
}

// onHPA queues the revisions whose workload an added, changed or removed
// HorizontalPodAutoscaler targets (before and after a change): the
// Revisions that reference it and the annotated workload of its name.
func (p *Platform) onHPA(old, obj any) {
	for _, o := range []any{old, obj} {
		if d, ok := o.(cache.DeletedFinalStateUnknown); ok {
			o = d.Obj
		}
		h, ok := o.(*autoscalingv2.HorizontalPodAutoscaler)
		if !ok {
			continue
		}
		p.enqueueTarget(hpaTarget(h))
	}
}
