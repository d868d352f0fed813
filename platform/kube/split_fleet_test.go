package kube

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/thaw-dev/thaw/api/v1alpha1"
	"github.com/thaw-dev/thaw/revision"
)

// TestFleetSplitStatus covers the status of a RevisionSplit with hosts
// (thaw's own fleet): the registry's resolution decides Pending (not yet
// published as is), SplitConflict and InvalidSplit; a resolved split
// lists its hosts and tag hosts in status.hosts.
func TestFleetSplitStatus(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	split := testSplit(tt("v1", 90, ""), tt("v2", 10, "canary"))
	split.Spec.Hosts = []string{"Shop.example.com", "*.shop.example.com"}
	published, _ := fleetSplit(split)
	published.Hosts = []string{"shop.example.com", "*.shop.example.com"}
	with := func(err error) *revision.Split {
		s := published
		s.Err = err
		return &s
	}
	stale := published
	stale.Hosts = []string{"old.example.com"}
	tests := []struct {
		name    string
		fleet   *revision.Split
		members []splitMember
		status  metav1.ConditionStatus
		reason  string
		msg     string
		hosts   []string
	}{
		{"resolved", with(nil), []splitMember{routed, routed}, metav1.ConditionTrue, v1alpha1.ReasonResolved, "all 2",
			[]string{"shop.example.com", "*.shop.example.com", "canary-shop.example.com"}},
		{"not published", nil, []splitMember{routed, routed}, metav1.ConditionUnknown, v1alpha1.ReasonPending, "publish the split's hosts", nil},
		{"stale", &stale, []splitMember{routed, routed}, metav1.ConditionUnknown, v1alpha1.ReasonPending, "publish", nil},
		{"conflict", with(fmt.Errorf("%w: revision apps/v1 is a member of split apps/first", revision.ErrSplitConflict)),
			[]splitMember{routed, routed}, metav1.ConditionFalse, v1alpha1.ReasonSplitConflict, "member of split apps/first", nil},
		{"invalid host", with(fmt.Errorf("%w: bad host", revision.ErrSplitSpec)), []splitMember{routed, routed},
			metav1.ConditionFalse, v1alpha1.ReasonInvalidSplit, "hosts answer 404", nil},
		{"missing revision", with(fmt.Errorf("%w: apps/v2", revision.ErrSplitRevisionNotFound)), []splitMember{routed, missing},
			metav1.ConditionFalse, v1alpha1.ReasonRevisionNotFound, "hosts (they answer 404)", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st := splitStatus(splitInput{split: split, members: tc.members, now: t0, fleet: tc.fleet})
			ready := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionReady)
			if ready.Status != tc.status || ready.Reason != tc.reason || !strings.Contains(ready.Message, tc.msg) {
				t.Errorf("Ready = %s %s %q, want %s %s containing %q", ready.Status, ready.Reason, ready.Message, tc.status, tc.reason, tc.msg)
			}
			if !slices.Equal(st.Hosts, tc.hosts) {
				t.Errorf("hosts %v, want %v", st.Hosts, tc.hosts)
			}
		})
	}
	// Without hosts (Envoy Gateway) the registry has no say.
	eg := testSplit(tt("v1", 100, ""))
	if st := splitStatus(splitInput{split: eg, members: []splitMember{routed}, now: t0}); st.Hosts != nil ||
		meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionReady).Reason != v1alpha1.ReasonResolved {
		t.Errorf("split without hosts: %+v", st)
	}
}

// TestFeedSplit checks what a RevisionSplit publishes in the registry.
func TestFeedSplit(t *testing.T) {
	reg := revision.NewRegistry(revision.RegistryOptions{})
	p := &Platform{opts: Options{Registry: reg}}
	s := testSplit(tt("v1", 100, "x"))
	key := revision.Key{Namespace: s.Namespace, Name: s.Name}
	p.feedSplit(key, s, false)
	if reg.Snapshot().Splits != nil {
		t.Fatal("a split without hosts (Envoy Gateway's) reached the registry")
	}
	s.Spec.Hosts = []string{"shop.example.com"}
	p.feedSplit(key, s, false)
	got := reg.Snapshot().Splits[key]
	if got == nil || got.Traffic[0].Revision != (revision.Key{Namespace: testNS, Name: "v1"}) || got.Traffic[0].Tag != "x" {
		t.Fatalf("published %+v", got)
	}
	if !errors.Is(got.Err, revision.ErrSplitRevisionNotFound) {
		t.Errorf("Err = %v, want revision not found", got.Err)
	}
	p.feedSplit(key, s, true)
	if reg.Snapshot().Splits[key] != nil {
		t.Error("deleted split still published")
	}
}
