package kube

import (
	"context"
	"errors"

	"github.com/thaw-dev/thaw/revision"
	"github.com/thaw-dev/thaw/xds/translate"
)

// RouteVerdicts is the Envoy translation's verdict on the splits of
// thaw's own fleet (xds.Server implements it): the splits the last
// translation left out, by key, with why, and a channel closed when that
// set changes. The translation is the one writer of that fact; the
// platform only reports it in the RevisionSplit's status.
type RouteVerdicts interface {
	SplitVerdicts() (map[revision.Key]error, <-chan struct{})
	// SkipReason returns why the last translation left the revision key
	// out (nil when it is routed or unknown).
	SkipReason(key revision.Key) error
}

// SetRouteVerdicts makes RevisionSplit and Revision statuses report the
// translation's verdict v (a split the registry accepts whose Revision
// the translation left out is not Ready: RevisionNotRouted; a Revision
// the translation left out is not Ready: NotRouted). Call it before Run;
// nil turns it off.
func (p *Platform) SetRouteVerdicts(v RouteVerdicts) { p.routes = v }

// routeVerdict returns why the translation left the split key out while
// the registry accepts it (a *translate.SplitLeftOutError), or nil. A
// split the registry refuses is reported from the registry's own error.
func (p *Platform) routeVerdict(key revision.Key) error {
	if p.routes == nil {
		return nil
	}
	m, _ := p.routes.SplitVerdicts()
	if err := m[key]; errors.Is(err, translate.ErrSplitMemberLeftOut) {
		return err
	}
	return nil
}

// revisionVerdict returns why the translation left the Revision key out,
// or nil (also without verdicts). Cheap: a map read under xds's read lock.
func (p *Platform) revisionVerdict(key revision.Key) error {
	if p.routes == nil {
		return nil
	}
	return p.routes.SkipReason(key)
}

// watchRouteVerdicts queues every RevisionSplit whose verdict changes,
// until ctx ends. While RevisionSplits are not watched (the CRD is not
// served yet) nothing is queued: discovery queues them all once it is.
func (p *Platform) watchRouteVerdicts(ctx context.Context) {
	var prev map[revision.Key]error
	for {
		cur, changed := p.routes.SplitVerdicts()
		if sr := p.splits.Load(); sr != nil {
			for k, err := range cur {
				if !sameErr(prev[k], err) {
					sr.queue.Add(k)
				}
			}
			for k := range prev {
				if _, ok := cur[k]; !ok {
					sr.queue.Add(k)
				}
			}
		}
		prev = cur
		select {
		case <-ctx.Done():
			return
		case <-changed:
		}
	}
}

// leftOutMembers returns, for a *translate.SplitLeftOutError, each member
// left out (by Revision name) with the translation's reason; nil for any
// other error.
func leftOutMembers(err error) map[string]string {
	var lo *translate.SplitLeftOutError
	if !errors.As(err, &lo) {
		return nil
	}
	out := make(map[string]string, len(lo.LeftOut))
	for _, m := range lo.LeftOut {
		out[m.Revision.Name] = m.Err.Error()
	}
	return out
}
