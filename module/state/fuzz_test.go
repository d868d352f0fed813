package state

import (
	"testing"
	"time"

	"github.com/thaw-dev/thaw/wake"
)

// FuzzDecodeUpdate: no input panics the decoder, and whatever it accepts
// applies to a table without panicking.
func FuzzDecodeUpdate(f *testing.F) {
	f.Add([]byte(`{"full":true,"revisions":[{"key":"ns/a","queueDepth":10,"holdTimeoutMs":1000,"backends":[{"addr":"127.0.0.1:80","slots":4}]}]}`))
	f.Add([]byte(`{"removed":["ns/a"]}`))
	f.Add([]byte(`{"full":true,"maxHeld":784}`))
	f.Add([]byte(`{"full":true,"revisions":[{"key":"ns/a","queueDepth":1,"holdTimeoutMs":1}],"seq":18446744073709551615}`))
	f.Add([]byte(`{"revisions":[{"key":"ns/a","queueDepth":1,"holdTimeoutMs":1,"wake":{"rules":[{"name":"probe","userAgent":"kube-probe/.*"}],"waitingPage":{"refresh":"1s"},"coldStartHeader":true}}]}`))
	f.Add([]byte(`{"revisions":[{"key":"ns/a","queueDepth":1,"holdTimeoutMs":1,"wake":{"rules":[{"name":"x","path":"(("}]}}]}`))
	f.Add([]byte(`{"revisions":[{"key":"ns/a","queueDepth":1,"holdTimeoutMs":1,"backends":[{"addr":"[::1]:80","slots":-1}]}]}`))
	f.Add([]byte(`{"revisions":[{"key":"ns/a","queueDepth":1,"holdTimeoutMs":1,"backends":[{"addr":"127.0.0.1:80","slots":2,"unconfirmed":true},{"addr":"127.0.0.1:81","slots":2}]}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		u, err := DecodeUpdate(b)
		if err != nil {
			return
		}
		tab := NewTable(time.Minute, 10)
		_ = tab.Apply(u) // a wake policy that does not compile is reported, not fatal
		for _, ru := range u.Revisions {
			if r := tab.Lookup(ru.Key); r != nil {
				if b := r.Acquire(); b != nil {
					r.Release(b)
				}
				r.WakeAnswer(func() wake.Request { return wake.Request{Method: "GET", Path: "/"} })
			}
		}
	})
}

// FuzzDecodeConfig covers the per-route and filter configurations Envoy
// hands the module.
func FuzzDecodeConfig(f *testing.F) {
	f.Add([]byte(`{"revision":"ns/a"}`))
	f.Add([]byte(`{"revision":"ns/a","cluster":"rev_ns_a"}`))
	f.Add([]byte(`{"revision":"ns/a","cluster":""}`))
	f.Add([]byte(`{"revision":"ns/a\u0041"}`))
	f.Add([]byte(`{"revision":"ns/a"} `))
	f.Add([]byte(`{"stateURL":"http://127.0.0.1:1/x","node":"n","holdTimeoutMs":5}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		if c, err := DecodeRouteConfig(b); err == nil && validKey(c.Revision) != nil {
			t.Fatalf("accepted invalid revision %q", c.Revision)
		}
		if c, err := DecodeRouteConfig(b); err == nil && validClusterName(c.Cluster) != nil {
			t.Fatalf("accepted invalid cluster %q", c.Cluster)
		}
		if fast, ok := decodeRouteConfigFast(b); ok {
			if slow, err := decodeRouteConfigJSON(b); err != nil || slow != fast {
				t.Fatalf("fast path decoded %+v, the strict decoder %+v, %v", fast, slow, err)
			}
		}
		if c, err := DecodeFilterConfig(b); err == nil && (c.HoldTimeoutMs <= 0 || c.QueueDepth <= 0) {
			t.Fatalf("accepted config without limits: %+v", c)
		}
	})
}

// FuzzDecodeReport covers the report thaw decodes from modules.
func FuzzDecodeReport(f *testing.F) {
	f.Add([]byte(`{"node":"n","revisions":[{"key":"ns/a","held":1,"inFlight":2}],"pokes":["ns/a"]}`))
	f.Add([]byte(`{"node":"n","wake":[{"key":"ns/a","rule":"probe","count":3},{"key":"ns/a","page":true,"count":1}]}`))
	f.Add([]byte(`{"node":"n","heldLimit":5}`))
	f.Add([]byte(`{"node":"n","applied":7205759403792793600}`))
	f.Add([]byte(`{"applied":3}`))
	f.Add([]byte(`{"node":"n","revisions":[{"key":"ns/a","held":0,"inFlight":2,"early":1}]}`))
	f.Add([]byte(`{"node":"n","revisions":[{"key":"ns/a","held":0,"inFlight":1,"early":2}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := DecodeReport(b)
		if err != nil {
			return
		}
		if r.Applied != 0 && r.Node == "" {
			t.Fatalf("accepted applied %d without a node", r.Applied)
		}
		for _, c := range r.Revisions {
			if c.Held < 0 || c.InFlight < 0 || c.Early < 0 || c.Early > c.InFlight {
				t.Fatalf("accepted counts %+v", c)
			}
		}
		for _, c := range r.Wake {
			if c.Count < 0 || (c.Rule == "") != c.Page {
				t.Fatalf("accepted wake count %+v", c)
			}
		}
	})
}
