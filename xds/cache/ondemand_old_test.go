package cache

import (
	"bytes"
	"testing"

	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
)

// oldDemand records what Demand.Set and Delete are told a name had.
type oldDemand struct {
	fakeDemand
	sets, dels []demandCall
}

type demandCall struct {
	name     string
	old, enc []byte
}

func (d *oldDemand) Set(name string, old, enc []byte) {
	d.sets = append(d.sets, demandCall{name, old, enc})
}
func (d *oldDemand) Delete(name string, old []byte) {
	d.dels = append(d.dels, demandCall{name, old, nil})
}

// The Demand keeps no copy of what it derives from a host's encoding
// (ondemand.Index): the cache hands it the encoding a name had.
func TestDemandToldOldEncoding(t *testing.T) {
	c := NewDelta(resourcev3.VirtualHostType, 64)
	setVHosts(t, c, "thaw_http/a")
	first := c.res["thaw_http/a"].bytes
	d := &oldDemand{}
	c.SetDemand(d, 2)
	if len(d.sets) != 1 || d.sets[0].old != nil || !bytes.Equal(d.sets[0].enc, first) {
		t.Fatalf("SetDemand: %+v, want a's encoding as new", d.sets)
	}
	// Replaced: old is what a had.
	c.mu.Lock()
	c.res["thaw_http/a"] = &Entry{name: "thaw_http/a", bytes: []byte("stale"), version: "v0"}
	c.mu.Unlock()
	setVHosts(t, c, "thaw_http/a")
	if got := d.sets[len(d.sets)-1]; string(got.old) != "stale" || !bytes.Equal(got.enc, first) {
		t.Fatalf("replace: old %q enc %q", got.old, got.enc)
	}
	// Deleted: old is its last encoding; an unknown name is not passed on.
	if err := c.Update(nil, nil, nil, []string{"thaw_http/a", "thaw_http/none"}); err != nil {
		t.Fatal(err)
	}
	if len(d.dels) != 1 || d.dels[0].name != "thaw_http/a" || !bytes.Equal(d.dels[0].old, first) {
		t.Fatalf("delete: %+v", d.dels)
	}
	// An entry with an empty encoding is still told apart from a new name.
	if (&Entry{}).encoding() == nil {
		t.Fatal("an empty entry's encoding is nil: the Demand would take it as new")
	}
}
