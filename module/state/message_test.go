package state

import (
	"errors"
	"testing"
)

func TestDecodeUpdate(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		ok       bool
	}{
		{"full", `{"full":true,"revisions":[{"key":"ns/a","queueDepth":10,"holdTimeoutMs":1000,"backends":[{"addr":"127.0.0.1:80","slots":4}]}]}`, true},
		{"removed", `{"removed":["ns/a"]}`, true},
		{"ipv6", `{"revisions":[{"key":"ns/a","queueDepth":1,"holdTimeoutMs":1,"backends":[{"addr":"[::1]:80","slots":0}]}]}`, true},
		{"bad key", `{"revisions":[{"key":"a","queueDepth":1,"holdTimeoutMs":1}]}`, false},
		{"name not ip", `{"revisions":[{"key":"ns/a","queueDepth":1,"holdTimeoutMs":1,"backends":[{"addr":"pod:80"}]}]}`, false},
		{"dup backend", `{"revisions":[{"key":"ns/a","queueDepth":1,"holdTimeoutMs":1,"backends":[{"addr":"127.0.0.1:80"},{"addr":"127.0.0.1:80"}]}]}`, false},
		{"dup revision", `{"revisions":[{"key":"ns/a","queueDepth":1,"holdTimeoutMs":1},{"key":"ns/a","queueDepth":1,"holdTimeoutMs":1}]}`, false},
		{"zero depth", `{"revisions":[{"key":"ns/a","queueDepth":0,"holdTimeoutMs":1}]}`, false},
		{"bad slots", `{"revisions":[{"key":"ns/a","queueDepth":1,"holdTimeoutMs":1,"backends":[{"addr":"127.0.0.1:80","slots":-2}]}]}`, false},
		{"max held", `{"full":true,"maxHeld":784}`, true},
		{"negative max held", `{"full":true,"maxHeld":-1}`, false},
		{"unknown field", `{"revision":[]}`, false},
		{"not json", `{`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := DecodeUpdate([]byte(tc.in))
			if (err == nil) != tc.ok {
				t.Fatalf("err = %v, want ok %v", err, tc.ok)
			}
			if err != nil && !errors.Is(err, ErrInvalid) {
				t.Fatalf("error %v does not wrap ErrInvalid", err)
			}
		})
	}
}

func TestDecodeConfigs(t *testing.T) {
	if c, err := DecodeRouteConfig([]byte(`{"revision":"ns/a"}`)); err != nil || c.Revision != "ns/a" {
		t.Fatalf("route config: %+v %v", c, err)
	}
	if _, err := DecodeRouteConfig([]byte(`{"revision":""}`)); err == nil {
		t.Fatal("empty revision accepted")
	}
	c, err := DecodeFilterConfig(nil)
	if err != nil || c.HoldTimeoutMs != 30000 || c.QueueDepth != 10000 || c.RetryAfterSeconds != 1 {
		t.Fatalf("defaults: %+v %v", c, err)
	}
	if c, err := DecodeFilterConfig([]byte(`{"revision":"ns/a"}`)); err != nil || c.Revision != "ns/a" {
		t.Fatalf("filter config with a revision: %+v %v", c, err)
	}
	if _, err := DecodeFilterConfig([]byte(`{"revision":"a"}`)); err == nil {
		t.Fatal("filter config with an invalid revision accepted")
	}
	if _, err := DecodeFilterConfig([]byte(`{"stateURL":"file:///etc/passwd"}`)); err == nil {
		t.Fatal("non-http state URL accepted")
	}
}
