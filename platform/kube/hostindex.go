package kube

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/thaw-dev/thaw/revision"
)

// hostIndex records which revisions claim each host, in normal form
// (revision.NormalizeHost, which ParseSettings already applied), so that a
// host claimed by two workloads makes one of them invalid, reported like
// any configuration error (log, Event, metric, `thaw status` row) instead
// of being dropped silently by the xds translation.
//
// The workload created first keeps a contested host (the lower key on a
// tie), the rule pickWinner uses for a Deployment and a StatefulSet of one
// name: a new workload cannot take a host, and so traffic, from one that
// already serves it. Only valid revisions claim hosts (a revision invalid
// for another reason does not block anyone), and one that lost a host keeps
// its claim, so it becomes valid again as soon as the owner lets go.
//
// Guarded by Platform.mu. Its size is the number of hosts of the watched
// workloads.
type hostIndex struct {
	// claims: host → claimants, owner first.
	claims map[string][]hostClaim
	// byKey: the hosts and creation time each claimant registered.
	byKey map[revision.Key]hostClaim
}

type hostClaim struct {
	key     revision.Key
	created time.Time
	hosts   []string
	// split: the revision has a traffic percent, so it may share its hosts
	// with others (the xds translation checks the split as a whole).
	split bool
}

func newHostIndex() *hostIndex {
	return &hostIndex{claims: map[string][]hostClaim{}, byKey: map[revision.Key]hostClaim{}}
}

// claimBefore orders claimants: the earliest created first, then by key.
func claimBefore(a, b hostClaim) int {
	if c := a.created.Compare(b.created); c != 0 {
		return c
	}
	if a.key.Namespace != b.key.Namespace {
		if a.key.Namespace < b.key.Namespace {
			return -1
		}
		return 1
	}
	switch {
	case a.key.Name < b.key.Name:
		return -1
	case a.key.Name > b.key.Name:
		return 1
	}
	return 0
}

// set records that key (a workload created at created) claims hosts, and
// returns the other revisions whose ownership may have changed: the other
// claimants of every host added or removed. It returns nil when the claim
// is unchanged, so re-reconciling those revisions never loops.
func (x *hostIndex) set(key revision.Key, created time.Time, hosts []string, split bool) []revision.Key {
	hosts = slices.Clone(hosts)
	slices.Sort(hosts)
	hosts = slices.Compact(hosts)
	old, had := x.byKey[key]
	if had && old.created.Equal(created) && slices.Equal(old.hosts, hosts) && old.split == split {
		return nil
	}
	affected := x.remove(key)
	c := hostClaim{key: key, created: created, hosts: hosts, split: split}
	x.byKey[key] = c
	for _, h := range hosts {
		cs := x.claims[h]
		for _, o := range cs {
			affected = append(affected, o.key)
		}
		i, _ := slices.BinarySearchFunc(cs, c, claimBefore)
		x.claims[h] = slices.Insert(cs, i, c)
	}
	return dedupKeys(affected)
}

// remove drops key's claims and returns the other claimants of its hosts.
func (x *hostIndex) remove(key revision.Key) []revision.Key {
	old, had := x.byKey[key]
	if !had {
		return nil
	}
	delete(x.byKey, key)
	var affected []revision.Key
	for _, h := range old.hosts {
		cs := slices.DeleteFunc(x.claims[h], func(c hostClaim) bool { return c.key == key })
		if len(cs) == 0 {
			delete(x.claims, h)
			continue
		}
		x.claims[h] = cs
		for _, o := range cs {
			affected = append(affected, o.key)
		}
	}
	return dedupKeys(affected)
}

// conflicts returns one *revision.FieldError (field thaw.dev/hosts) per
// host of key that another revision owns, joined; nil when key owns all
// its hosts. Revisions with a traffic percent share hosts by design and
// never conflict here: the xds translation checks each split as a whole
// (percents summing to 100, every member with a percent). Among the
// others the first created owns the host.
func (x *hostIndex) conflicts(key revision.Key) error {
	if x.byKey[key].split {
		return nil
	}
	var errs []error
	for _, h := range x.byKey[key].hosts {
		owner := key
		if i := slices.IndexFunc(x.claims[h], func(c hostClaim) bool { return !c.split }); i >= 0 {
			owner = x.claims[h][i].key
		}
		if owner != key {
			errs = append(errs, &revision.FieldError{Field: AnnotationHosts, Value: h,
				Allowed: fmt.Sprintf("a host no other revision uses (revision %s has it and was created first)", owner)})
		}
	}
	return errors.Join(errs...)
}

func dedupKeys(keys []revision.Key) []revision.Key {
	if len(keys) < 2 {
		return keys
	}
	slices.SortFunc(keys, func(a, b revision.Key) int {
		return claimBefore(hostClaim{key: a}, hostClaim{key: b})
	})
	return slices.Compact(keys)
}
