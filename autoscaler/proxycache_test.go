package autoscaler

import (
	"testing"
	"time"

	"github.com/thaw-dev/thaw/revision"
)

// scriptedConfirmer answers from a script and counts the questions.
type scriptedConfirmer struct {
	asked int
	ok    bool
	since time.Time
}

func (c *scriptedConfirmer) ProxyConfirmedSince(revision.Key) (time.Time, bool) {
	c.asked++
	if !c.ok {
		return time.Time{}, false
	}
	return c.since, true
}

func TestProxyConfirmationKeptUntilRevisionChanges(t *testing.T) {
	at := time.Unix(1000, 0)
	c := &scriptedConfirmer{}
	st := &decisionState{key: revision.Key{Namespace: "default", Name: "a"}}
	steps := []struct {
		name      string
		confirmed bool // the confirmer's answer from now on
		changed   bool // sync saw the registry entry change before the step
		wantOK    bool
		wantAsked int
	}{
		{"unconfirmed: asked", false, false, false, 1},
		{"still unconfirmed: asked again", false, false, false, 2},
		{"confirmed: asked", true, false, true, 3},
		{"confirmed: kept", true, false, true, 3},
		{"kept while the confirmer would say no, revision unchanged", false, false, true, 3},
		{"revision changed: asked again", false, true, false, 4},
		{"confirmed again: asked", true, false, true, 5},
		{"kept", true, false, true, 5},
	}
	for _, s := range steps {
		c.ok, c.since = s.confirmed, at
		if s.changed {
			st.proxyStale.Store(true)
		}
		since, ok := st.proxyConfirmedSince(c)
		if ok != s.wantOK || c.asked != s.wantAsked || (ok && !since.Equal(at)) {
			t.Fatalf("%s: got (%v, %v) after %d questions, want ok %v after %d", s.name, since, ok, c.asked, s.wantOK, s.wantAsked)
		}
	}
}
