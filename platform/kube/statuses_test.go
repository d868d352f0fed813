package kube

import (
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/thaw-dev/thaw/revision"
)

func TestStatusCacheRendersChangesOnly(t *testing.T) {
	reg := revision.NewRegistry(revision.RegistryOptions{})
	a, b, bad := revision.Key{Namespace: "ns", Name: "a"}, revision.Key{Namespace: "ns", Name: "b"}, revision.Key{Namespace: "ns", Name: "bad"}
	spec := revision.DefaultSpec()
	spec.Hosts = []string{"a.example.com"}
	reg.Upsert(a, spec)
	spec.Hosts = []string{"b.example.com"}
	reg.Upsert(b, spec)
	reg.SetInvalid(bad, errors.New("port: must be 1-65535"))
	revs := map[revision.Key]*trackedTarget{
		a:   {kind: KindDeployment, ref: objRef("a")},
		b:   {kind: KindDeployment, ref: objRef("b")},
		bad: {kind: KindDeployment, ref: objRef("bad")},
	}
	var c statusCache
	c.update(reg.Snapshot())
	todo := c.dueLocked(revs, nil)
	if len(todo) != 3 {
		t.Fatalf("first pass: %d patches (%+v), want 3", len(todo), todo)
	}
	for _, sp := range todo {
		revs[sp.key].status = sp.value
		c.patched(sp.key, sp.value)
	}
	if want := `{"mode":"invalid","desired":-1,"ready":0,"error":"invalid thaw configuration: port: must be 1-65535"}`; c.want[bad] != want {
		t.Errorf("invalid status = %s, want %s", c.want[bad], want)
	}
	if todo := c.dueLocked(revs, nil); len(todo) != 0 || len(c.due) != 0 {
		t.Fatalf("nothing changed: patches %+v, due %v", todo, c.due)
	}

	// One revision changes: only it is rendered and patched.
	reg.SetMode(a, revision.ModeServe)
	c.update(reg.Snapshot())
	if len(c.due) != 1 {
		t.Fatalf("due after one change = %v, want only %s", c.due, a)
	}
	todo = c.dueLocked(revs, nil)
	if len(todo) != 1 || todo[0].key != a || todo[0].value != `{"mode":"serve","desired":-1,"ready":0}` {
		t.Fatalf("patches = %+v, want a's serve status", todo)
	}
	// The patch fails: still due next time.
	if todo := c.dueLocked(revs, nil); len(todo) != 1 {
		t.Fatalf("after a failed patch: %+v, want a again", todo)
	}
	revs[a].status = todo[0].value
	c.patched(a, todo[0].value)

	// Someone edits b's annotation: the cache reports it, b is patched back.
	revs[b].status = `{"mode":"edited"}`
	todo = c.dueLocked(revs, map[revision.Key]struct{}{b: {}})
	if len(todo) != 1 || todo[0].key != b || todo[0].value != c.want[b] {
		t.Fatalf("after an edit: %+v, want b restored", todo)
	}

	// Deleted: no longer due, no value.
	reg.Delete(bad)
	c.update(reg.Snapshot())
	delete(revs, bad)
	if todo := c.dueLocked(revs, nil); len(todo) != 1 || todo[0].key != b {
		t.Fatalf("after delete: %+v, want only b (still edited)", todo)
	}
	if _, ok := c.want[bad]; ok {
		t.Error("deleted revision keeps a status value")
	}
}

func objRef(name string) *corev1.ObjectReference {
	return &corev1.ObjectReference{Kind: "Deployment", Namespace: "ns", Name: name}
}
