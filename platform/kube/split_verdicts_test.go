package kube

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/workqueue"

	"github.com/thaw-dev/thaw/api/v1alpha1"
	"github.com/thaw-dev/thaw/revision"
	"github.com/thaw-dev/thaw/xds/translate"
)

// TestFleetSplitRouteVerdict: a split the registry accepts but whose
// Revision the translation left out is not Ready (RevisionNotRouted, the
// translation's reason in the message, the entry's reason in
// status.traffic, no status.hosts); a verdict of any other kind (the
// registry's own refusal) adds nothing.
func TestFleetSplitRouteVerdict(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	split := testSplit(tt("v1", 90, ""), tt("v2", 10, ""))
	split.Spec.Hosts = []string{"shop.example.com"}
	published, _ := fleetSplit(split)
	leftOut := &translate.SplitLeftOutError{Split: published.Key, Describe: published.Describe(),
		LeftOut: []translate.LeftOutMember{{Revision: key("v2"), Err: errors.New(`host "dup.example.com" collision`)}}}
	tests := []struct {
		name     string
		routeErr error
		members  []splitMember
		status   metav1.ConditionStatus
		reason   string
		msg      string
		traffic  []string
		hasHosts bool
	}{
		{"routed", nil, []splitMember{routed, routed}, metav1.ConditionTrue, v1alpha1.ReasonResolved, "all 2",
			[]string{v1alpha1.ReasonRouted, v1alpha1.ReasonRouted}, true},
		{"member left out", leftOut, []splitMember{routed, routed}, metav1.ConditionFalse, v1alpha1.ReasonRevisionNotRouted,
			`answer 404) because of these Revisions: v2 (10%): left out of Envoy configuration: host "dup.example.com" collision`,
			[]string{v1alpha1.ReasonRouted, v1alpha1.ReasonRevisionNotRouted}, false},
		{"missing wins", leftOut, []splitMember{missing, routed}, metav1.ConditionFalse, v1alpha1.ReasonRevisionNotFound, "v1 (90%)",
			[]string{v1alpha1.ReasonRevisionNotFound, v1alpha1.ReasonRevisionNotRouted}, false},
		{"other verdict", fmt.Errorf("split apps/s: %w", revision.ErrSplitSpec), []splitMember{routed, routed},
			metav1.ConditionTrue, v1alpha1.ReasonResolved, "all 2", []string{v1alpha1.ReasonRouted, v1alpha1.ReasonRouted}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := &Platform{routes: fakeVerdicts{m: map[revision.Key]error{published.Key: tc.routeErr}}}
			st := splitStatus(splitInput{split: split, members: tc.members, now: t0, fleet: &published,
				routeErr: p.routeVerdict(published.Key)})
			ready := meta.FindStatusCondition(st.Conditions, v1alpha1.ConditionReady)
			if ready.Status != tc.status || ready.Reason != tc.reason || !strings.Contains(ready.Message, tc.msg) {
				t.Errorf("Ready = %s %s %q, want %s %s containing %q", ready.Status, ready.Reason, ready.Message, tc.status, tc.reason, tc.msg)
			}
			var reasons []string
			for _, tr := range st.Traffic {
				reasons = append(reasons, tr.Reason)
			}
			if !slices.Equal(reasons, tc.traffic) {
				t.Errorf("traffic reasons %v, want %v", reasons, tc.traffic)
			}
			if (len(st.Hosts) > 0) != tc.hasHosts {
				t.Errorf("hosts %v, want some: %v", st.Hosts, tc.hasHosts)
			}
		})
	}
	if err := (&Platform{}).routeVerdict(published.Key); err != nil {
		t.Errorf("no verdicts: %v", err)
	}
}

// fakeVerdicts is a RouteVerdicts whose set is replaced by set.
type fakeVerdicts struct {
	mu *sync.Mutex
	m  map[revision.Key]error
	ch *chan struct{}
	// skipped are the revisions the translation left out (SkipReason).
	skipped map[revision.Key]error
}

func (f fakeVerdicts) SkipReason(key revision.Key) error { return f.skipped[key] }

func (f fakeVerdicts) SplitVerdicts() (map[revision.Key]error, <-chan struct{}) {
	if f.mu == nil {
		return f.m, nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.m, *f.ch
}

// TestWatchRouteVerdicts: each change of the verdicts queues exactly the
// RevisionSplits whose verdict changed (added, other reason, removed).
func TestWatchRouteVerdicts(t *testing.T) {
	a, b := key("a"), key("b")
	var mu sync.Mutex
	ch := make(chan struct{})
	m := map[revision.Key]error{a: errors.New("x")}
	fv := &fakeVerdicts{mu: &mu, m: m, ch: &ch}
	set := func(next map[revision.Key]error) {
		mu.Lock()
		old := ch
		fv.m, ch = next, make(chan struct{})
		mu.Unlock()
		close(old)
	}
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[revision.Key]())
	defer q.ShutDown()
	p := &Platform{}
	p.splits.Store(&splitReconciler{queue: q})
	p.routes = fv
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); p.watchRouteVerdicts(ctx) }()
	defer func() { cancel(); <-done }()
	next := func(t *testing.T, want revision.Key) {
		t.Helper()
		got, quit := q.Get()
		if quit || got != want {
			t.Fatalf("queued %v (quit %v), want %v", got, quit, want)
		}
		q.Done(got)
	}
	next(t, a) // the first set
	for _, step := range []struct {
		m    map[revision.Key]error
		want revision.Key
	}{
		{map[revision.Key]error{a: errors.New("x"), b: errors.New("y")}, b}, // b added, a same
		{map[revision.Key]error{a: errors.New("z"), b: errors.New("y")}, a}, // a's reason changed
		{map[revision.Key]error{a: errors.New("z")}, b},                     // b routed again
	} {
		set(step.m)
		next(t, step.want)
	}
	if n := q.Len(); n != 0 {
		t.Errorf("%d more queued", n)
	}
}
