package kube

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	fakediscovery "k8s.io/client-go/discovery/fake"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	scalefake "k8s.io/client-go/scale/fake"
	k8stesting "k8s.io/client-go/testing"

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
	// A Revision listing a host of the split: the split takes it, and
	// says so.
	other := &revision.Revision{Key: revision.Key{Namespace: testNS, Name: "other"},
		Spec: revision.Spec{Hosts: []string{"other.example.com", "SHOP.example.com"}}}
	snap := &revision.Snapshot{Revisions: revision.NewRevisionMap(other)}
	taken := takenHosts(snap, with(nil))
	if want := []string{"shop.example.com (" + testNS + "/other)"}; !slices.Equal(taken, want) {
		t.Errorf("takenHosts = %v, want %v", taken, want)
	}
	if takenHosts(snap, with(errors.New("invalid"))) != nil {
		t.Error("an invalid split takes no host")
	}
	st := splitStatus(splitInput{split: split, members: []splitMember{routed, routed}, now: t0, fleet: with(nil), taken: taken})
	if c := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionReady); c.Reason != v1alpha1.ReasonResolved ||
		!strings.Contains(c.Message, "takes these hosts") || !strings.Contains(c.Message, "/other)") {
		t.Errorf("Ready with a taken host: %+v", c)
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

// lateDiscovery serves the Revision CRD, and the RevisionSplit CRD once
// splits is set (an install after thaw started).
type lateDiscovery struct {
	*fakediscovery.FakeDiscovery
	splits atomic.Bool
}

func (d *lateDiscovery) ServerResourcesForGroupVersion(gv string) (*metav1.APIResourceList, error) {
	l := &metav1.APIResourceList{GroupVersion: gv}
	if gv == v1alpha1.SchemeGroupVersion.String() {
		l.APIResources = []metav1.APIResource{{Name: "revisions", Namespaced: true}}
		if d.splits.Load() {
			l.APIResources = append(l.APIResources, metav1.APIResource{Name: "revisionsplits", Namespaced: true})
		}
	}
	return l, nil
}

// TestRevisionSplitCRDInstalledLater: the RevisionSplit CRD served only
// after the platform synced is picked up without a restart (discovery
// every SplitDiscoveryInterval): its splits reach the registry and get a
// status.
func TestRevisionSplitCRDInstalledLater(t *testing.T) {
	s := testSplit(tt("v1", 100, ""))
	s.UID, s.Spec.Hosts = "uid-s-shop", []string{"shop.example.com"}
	thaw := []runtime.Object{toUnstructured(t, splitTestRevision("v1"), v1alpha1.RevisionKind), toUnstructured(t, s, v1alpha1.RevisionSplitKind)}
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		v1alpha1.RevisionsResource: "RevisionList", v1alpha1.RevisionSplitsResource: "RevisionSplitList",
	}, thaw...)
	disc := &lateDiscovery{FakeDiscovery: &fakediscovery.FakeDiscovery{Fake: &k8stesting.Fake{}}}
	env := newEnv(t, func(o *Options) {
		o.Revisions, o.Dynamic, o.Discovery, o.SplitDiscoveryInterval = RevisionsOn, dyn, disc, 20*time.Millisecond
		o.Scales.(*scalefake.FakeScaleClient).AddReactor("get", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
			return true, &autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Name: "v1", Namespace: testNS},
				Spec: autoscalingv1.ScaleSpec{Replicas: 1}, Status: autoscalingv1.ScaleStatus{Selector: "app=v1"}}, nil
		})
	}, deployment("v1", 1, nil))
	env.waitFor(t, "v1 published", func(snap *revision.Snapshot) bool { return snap.Synced && snap.Get(key("v1")) != nil })
	if env.reg.Snapshot().Splits != nil || env.p.splits.Load() != nil {
		t.Fatal("RevisionSplits watched before their CRD is served")
	}
	disc.splits.Store(true)
	snap := env.waitFor(t, "the split published", func(snap *revision.Snapshot) bool { return snap.Splits[key("shop")] != nil })
	if err := snap.Splits[key("shop")].Err; err != nil {
		t.Errorf("split: %v", err)
	}
	se := &splitEnv{testEnv: env, dyn: dyn}
	st := se.ready(t, "shop", v1alpha1.ReasonResolved)
	if !slices.Equal(st.Hosts, []string{"shop.example.com"}) {
		t.Errorf("status.hosts %v", st.Hosts)
	}
}
