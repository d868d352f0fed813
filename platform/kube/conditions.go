package kube

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/thaw-dev/thaw/revision"
)

// The status code that Revisions and RevisionSplits share: conditions set
// with a bounded message and the object's generation, fingerprints that
// ignore transition times, and merge patches of the status subresource.

// conditionSet builds the conditions of one status from the object's
// prior ones: a condition keeps its lastTransitionTime while its status
// does not change (meta.SetStatusCondition).
type conditionSet struct {
	conds      []metav1.Condition
	generation int64
	now        time.Time
}

// newConditionSet starts from a copy of prior.
func newConditionSet(prior []metav1.Condition, generation int64, now time.Time) *conditionSet {
	return &conditionSet{conds: append([]metav1.Condition(nil), prior...), generation: generation, now: now}
}

// set sets condition typ; msg is cut at maxConditionMessage bytes.
func (c *conditionSet) set(typ string, st metav1.ConditionStatus, reason, msg string) {
	if len(msg) > maxConditionMessage {
		msg = msg[:maxConditionMessage]
	}
	meta.SetStatusCondition(&c.conds, metav1.Condition{Type: typ, Status: st, Reason: reason, Message: msg,
		ObservedGeneration: c.generation, LastTransitionTime: metav1.NewTime(c.now)})
}

// setBool is set with True for ok, else False.
func (c *conditionSet) setBool(typ string, ok bool, reason, msg string) {
	st := metav1.ConditionFalse
	if ok {
		st = metav1.ConditionTrue
	}
	c.set(typ, st, reason, msg)
}

// withoutTransitionTimes returns a copy of cs with every
// lastTransitionTime zero, for fingerprints.
func withoutTransitionTimes(cs []metav1.Condition) []metav1.Condition {
	if cs == nil {
		return nil
	}
	out := append([]metav1.Condition(nil), cs...)
	for i := range out {
		out[i].LastTransitionTime = metav1.Time{}
	}
	return out
}

// jsonFingerprint is v's JSON ("" when it does not encode).
func jsonFingerprint(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return ""
	}
	return string(b)
}

// patchStatusSubresource writes status through the status subresource of gvr's
// object key: a JSON merge patch of .status (thaw is the only writer), in
// which each field named in remove is null (a merge patch removes it).
// kind names the object in the error.
func (p *Platform) patchStatusSubresource(ctx context.Context, gvr schema.GroupVersionResource, kind string, key revision.Key,
	status any, remove ...string) error {
	b, err := json.Marshal(status)
	if err != nil {
		return err
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return err
	}
	for _, f := range remove {
		m[f] = nil
	}
	body, err := json.Marshal(map[string]any{"status": m})
	if err != nil {
		return err
	}
	_, err = p.opts.Dynamic.Resource(gvr).Namespace(key.Namespace).Patch(ctx, key.Name,
		types.MergePatchType, body, metav1.PatchOptions{FieldManager: FieldManager}, "status")
	if err != nil {
		return fmt.Errorf("patch %s %s status: %w", kind, key, err)
	}
	return nil
}
