package kube

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"go.uber.org/zap"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/cache"

	"github.com/thaw-dev/thaw/api/v1alpha1"
	"github.com/thaw-dev/thaw/revision"
)

// DefaultSplitDiscoveryInterval is how often thaw asks discovery whether
// the RevisionSplit CRD is served, while it was not at start.
const DefaultSplitDiscoveryInterval = 10 * time.Second

// fleetSplit returns the registry's split for a RevisionSplit with
// spec.hosts (thaw's own fleet); ok is false for one without hosts (the
// Envoy Gateway form: the HTTPRoute has the hosts) or one that did not
// decode.
func fleetSplit(s *v1alpha1.RevisionSplit) (revision.Split, bool) {
	if s == nil || len(s.Spec.Hosts) == 0 || s.Annotations[annotationDecodeError] != "" {
		return revision.Split{}, false
	}
	out := revision.Split{Key: revision.Key{Namespace: s.Namespace, Name: s.Name}, Hosts: s.Spec.Hosts, Created: s.CreationTimestamp.Time,
		Traffic: make([]revision.SplitTarget, len(s.Spec.Traffic))}
	for i, t := range s.Spec.Traffic {
		out.Traffic[i] = revision.SplitTarget{Revision: revision.Key{Namespace: s.Namespace, Name: t.RevisionName},
			Percent: t.Percent, Tag: t.Tag}
	}
	return out, true
}

// feedSplit publishes a RevisionSplit with hosts in the registry (the one
// writer of what Envoy routes), or removes it: deleted, without hosts, or
// not decodable. Cheap and non-blocking: informer handlers call it.
func (p *Platform) feedSplit(key revision.Key, obj any, deleted bool) {
	s, _ := obj.(*v1alpha1.RevisionSplit)
	if fs, ok := fleetSplit(s); ok && !deleted && s.DeletionTimestamp == nil {
		p.opts.Registry.SetSplit(fs)
		return
	}
	p.opts.Registry.DeleteSplit(key)
}

// fleetSplitsChanged queues the RevisionSplits whose resolution in the
// registry (revision.Split.Err) differs between two snapshots.
func fleetSplitsChanged(sr *splitReconciler, prev, cur *revision.Snapshot) {
	if cur.SameSplits(prev) {
		return
	}
	for k, s := range cur.Splits {
		if prev == nil || prev.Splits[k] == nil || !sameErr(prev.Splits[k].Err, s.Err) {
			sr.queue.Add(k)
		}
	}
	if prev != nil {
		for k := range prev.Splits {
			if cur.Splits[k] == nil {
				sr.queue.Add(k)
			}
		}
	}
}

func sameErr(a, b error) bool {
	return a == b || (a != nil && b != nil && a.Error() == b.Error())
}

// discoverSplits waits for the RevisionSplit CRD to be served (discovery
// every Options.SplitDiscoveryInterval, apimachinery wait) when it was not
// at start, then starts its informer and reconciler like Run would have,
// and runs them until ctx ends: installing the CRD after thaw needs no
// restart.
func (p *Platform) discoverSplits(ctx context.Context) {
	err := wait.PollUntilContextCancel(ctx, p.opts.SplitDiscoveryInterval, false, func(ctx context.Context) (bool, error) {
		return p.optional(ctx, v1alpha1.RevisionSplitsResource), nil
	})
	if err != nil {
		return // ctx ended
	}
	factory, inf, sr, err := p.newSplitInformer()
	if err != nil {
		p.log.Error("RevisionSplit CRD installed, but its informer failed: restart thaw", zap.Error(err))
		return
	}
	factory.Start(ctx.Done())
	defer factory.Shutdown()
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		return
	}
	p.splits.Store(sr)
	p.log.Info("RevisionSplit CRD installed: RevisionSplits watched")
	go func() {
		<-ctx.Done()
		sr.queue.ShutDown()
	}()
	p.enqueueAllSplits(false)
	p.runSplits(ctx)
}

// invalidSplitEffect says what an invalid split does to requests: behind
// Envoy Gateway its route answers 500; in thaw's own fleet its hosts
// answer 404.
func invalidSplitEffect(s *v1alpha1.RevisionSplit) string {
	if len(s.Spec.Hosts) > 0 {
		return "its hosts answer 404: "
	}
	return "its route answers 500: "
}

// fleetReady returns the Ready condition of a RevisionSplit with hosts
// when the registry decides it: Pending until the registry publishes this
// version of the split, SplitConflict or InvalidSplit (its hosts) when
// the registry refuses it. ok is false otherwise (a split without hosts,
// or one the registry accepts or refuses for a Revision: the members'
// reasons say more).
func fleetReady(in splitInput) (st metav1.ConditionStatus, reason, msg string, ok bool) {
	s := in.split
	want, fleet := fleetSplit(s)
	if !fleet {
		return "", "", "", false
	}
	switch f := in.fleet; {
	case f == nil || !samePublished(f, want):
		return metav1.ConditionUnknown, v1alpha1.ReasonPending, "waiting for thaw to publish the split's hosts", true
	case errors.Is(f.Err, revision.ErrSplitConflict):
		return metav1.ConditionFalse, v1alpha1.ReasonSplitConflict, "its hosts answer 404: " + f.Err.Error(), true
	case errors.Is(f.Err, revision.ErrSplitSpec):
		return metav1.ConditionFalse, v1alpha1.ReasonInvalidSplit, "its hosts answer 404: " + f.Err.Error(), true
	}
	return "", "", "", false
}

// samePublished reports whether the published split f is want (hosts in
// normal form).
func samePublished(f *revision.Split, want revision.Split) bool {
	if len(f.Hosts) != len(want.Hosts) || !slices.Equal(f.Traffic, want.Traffic) {
		return false
	}
	for i, h := range want.Hosts {
		if revision.NormalizeHost(h) != f.Hosts[i] {
			return false
		}
	}
	return true
}

// fleetHosts returns the hosts thaw's fleet routes for a resolved split:
// its hosts, then each member's tag hosts; nil without hosts or while the
// registry does not route it.
func fleetHosts(in splitInput) []string {
	f := in.fleet
	if len(in.split.Spec.Hosts) == 0 || f == nil || f.Err != nil {
		return nil
	}
	out := slices.Clone(f.Hosts)
	for _, t := range f.Traffic {
		out = append(out, f.TagHosts(t)...)
	}
	return out
}

// takenHosts returns "host (namespace/name)" for each host or tag host of
// a routed split that a valid revision lists as well, sorted: the split
// takes them (precedence over the revision's hosts and traffic.percent).
// It visits every revision of snap: splits are reconciled on change only.
func takenHosts(snap *revision.Snapshot, f *revision.Split) []string {
	if f == nil || f.Err != nil {
		return nil
	}
	hosts := map[string]bool{}
	for _, h := range f.Hosts {
		hosts[h] = true
	}
	for _, t := range f.Traffic {
		for _, th := range f.TagHosts(t) {
			hosts[th] = true
		}
	}
	var out []string
	for k, r := range snap.Revisions.All() {
		for _, h := range r.Spec.Hosts {
			if h = revision.NormalizeHost(h); hosts[h] {
				out = append(out, fmt.Sprintf("%s (%s)", h, k))
			}
		}
		if th := r.Spec.TagHost(); hosts[th] {
			out = append(out, fmt.Sprintf("%s (%s)", th, k))
		}
	}
	slices.Sort(out)
	if len(out) > 8 {
		out = append(out[:8], fmt.Sprintf("and %d more", len(out)-8))
	}
	return out
}

// splitsByHost maps each host and tag host of snap's routed splits to the
// split (nil without splits).
func splitsByHost(snap *revision.Snapshot) map[string]revision.Key {
	if len(snap.Splits) == 0 {
		return nil
	}
	out := map[string]revision.Key{}
	for k, f := range snap.Splits {
		if f.Err != nil {
			continue
		}
		for _, h := range f.Hosts {
			out[h] = k
		}
		for _, t := range f.Traffic {
			for _, th := range f.TagHosts(t) {
				out[th] = k
			}
		}
	}
	return out
}

// queueHostSplits queues the splits whose hosts a changed revision (before
// or after the change; either may be nil) lists: their status names the
// hosts they take from revisions.
func queueHostSplits(sr *splitReconciler, byHost map[string]revision.Key, revs ...*revision.Revision) {
	for _, r := range revs {
		if r == nil {
			continue
		}
		for _, h := range append(slices.Clone(r.Spec.Hosts), r.Spec.TagHost()) {
			if k, ok := byHost[revision.NormalizeHost(h)]; ok {
				sr.queue.Add(k)
			}
		}
	}
}
