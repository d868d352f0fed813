package revision

import (
	"errors"
	"testing"
	"time"
)

// created gives each split made by splitOf a later creation time.
var created = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func splitOf(ns, name string, hosts []string, targets ...SplitTarget) Split {
	created = created.Add(time.Second)
	return Split{Key: Key{Namespace: ns, Name: name}, Hosts: hosts, Traffic: targets, Created: created}
}

func tgt(name string, p int32, tag string) SplitTarget {
	return SplitTarget{Revision: Key{Namespace: "shop", Name: name}, Percent: p, Tag: tag}
}

// TestRegistrySplits checks how the registry resolves splits on
// publication: own rules, conflicts (the split created earlier keeps a
// revision or host, whatever the order the registry learnt them in), missing and invalid revisions, and republication when a
// member changes.
func TestRegistrySplits(t *testing.T) {
	r := NewRegistry(RegistryOptions{})
	spec := DefaultSpec()
	spec.Hosts = nil
	r.Upsert(Key{Namespace: "shop", Name: "v1"}, spec)
	r.Upsert(Key{Namespace: "shop", Name: "v2"}, spec)
	r.SetInvalid(Key{Namespace: "shop", Name: "bad"}, errors.New("port: out of range"))

	front := splitOf("shop", "front", []string{"Shop.Example.com:8080"}, tgt("v1", 90, ""), tgt("v2", 10, "canary"))
	r.SetSplit(splitOf("shop", "again", []string{"other.example.com"}, tgt("v2", 100, ""))) // created later, learnt first
	r.SetSplit(front)
	r.SetSplit(splitOf("shop", "hosts", []string{"shop.example.com"}, tgt("v9", 100, "")))
	r.SetSplit(splitOf("shop", "tagged", []string{"canary-shop.example.com"}, tgt("v8", 100, "")))
	r.SetSplit(splitOf("shop", "missing", []string{"m.example.com"}, tgt("gone", 100, "")))
	r.SetSplit(splitOf("shop", "invalid", []string{"i.example.com"}, tgt("bad", 100, "")))
	r.SetSplit(splitOf("shop", "sum", []string{"s.example.com"}, tgt("x", 50, ""), tgt("y", 40, "")))
	r.SetSplit(splitOf("shop", "ns", []string{"n.example.com"}, SplitTarget{Revision: Key{Namespace: "other", Name: "x"}, Percent: 100}))
	snap := r.Snapshot()
	want := map[string]error{
		"front": nil, "again": ErrSplitConflict, "hosts": ErrSplitConflict, "tagged": ErrSplitConflict,
		"missing": ErrSplitRevisionNotFound, "invalid": ErrSplitRevisionInvalid, "sum": ErrSplitSpec, "ns": ErrSplitSpec,
	}
	for name, w := range want {
		s := snap.Splits[Key{Namespace: "shop", Name: name}]
		if s == nil {
			t.Fatalf("split %s not published", name)
		}
		if (w == nil) != (s.Err == nil) || (w != nil && !errors.Is(s.Err, w)) {
			t.Errorf("split %s: Err = %v, want %v", name, s.Err, w)
		}
	}
	if h := snap.Splits[Key{Namespace: "shop", Name: "front"}].Hosts[0]; h != "shop.example.com" {
		t.Errorf("host %q, want the normal form", h)
	}

	// Unrelated changes keep the splits (same version); a member's keep
	// them too while the result says the same.
	v := snap.SplitVersion
	r.SetBackends(Key{Namespace: "shop", Name: "v1"}, []Backend{{Address: "10.0.0.1", Port: 80, Ready: true}})
	r.Upsert(Key{Namespace: "shop", Name: "unrelated"}, spec)
	if s := r.Snapshot(); !s.SameSplits(snap) || s.SplitVersion != v {
		t.Errorf("splits republished without a change")
	}
	// The member appears: missing resolves.
	r.Upsert(Key{Namespace: "shop", Name: "gone"}, spec)
	s2 := r.Snapshot()
	if s2.SameSplits(snap) || s2.Splits[Key{Namespace: "shop", Name: "missing"}].Err != nil {
		t.Errorf("missing member created: split not resolved (%v)", s2.Splits[Key{Namespace: "shop", Name: "missing"}].Err)
	}
	// Deleting the earlier split hands v2 to "again".
	r.DeleteSplit(Key{Namespace: "shop", Name: "front"})
	s3 := r.Snapshot()
	if _, ok := s3.Splits[Key{Namespace: "shop", Name: "front"}]; ok {
		t.Error("deleted split still published")
	}
	if err := s3.Splits[Key{Namespace: "shop", Name: "again"}].Err; err != nil {
		t.Errorf("again after front's deletion: %v", err)
	}
	if got := len(s3.SortedSplits()); got != 7 {
		t.Errorf("%d sorted splits, want 7", got)
	}
}
