package extproc

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/metadata"

	"github.com/thaw-dev/thaw/autoscaler"
	"github.com/thaw-dev/thaw/revision"
)

// samples is a Recorder keeping what it was given.
type samples struct {
	mu  sync.Mutex
	got []autoscaler.Sample
}

func (s *samples) Record(x autoscaler.Sample) {
	s.mu.Lock()
	s.got = append(s.got, x)
	s.mu.Unlock()
}

func (s *samples) take() []autoscaler.Sample {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.got
	s.got = nil
	return out
}

// TestHoldPathCounted: a request whose stream carries HoldPathMetadata
// (it came through the hold listener of an idle revision, which no
// revision cluster's stats count) is reported while it is held and after
// it is routed until its stream ends, then once at zero, then no more; a
// request without the metadata (through its revision's own cluster, which
// Envoy's stats count) is never reported.
func TestHoldPathCounted(t *testing.T) {
	e := newEnv(t, 5*time.Second)
	e.revision(demo, 1, time.Minute, 10) // at zero: held
	rec := &samples{}
	now := time.Unix(1000, 0)

	plain, cancelPlain := e.open(headers(RevisionHeader, demo.String()))
	defer cancelPlain()
	recv(t, plain) // held: override_message_timeout
	e.waitStats(demo, 1, 0)
	e.srv.ReportHoldPath(rec, HoldPathSource, now, nil)
	if got := rec.take(); len(got) != 0 {
		t.Fatalf("a request through its own cluster was reported: %+v", got)
	}

	ctx, cancel := context.WithTimeout(metadata.AppendToOutgoingContext(context.Background(), HoldPathMetadata, "1"), 30*time.Second)
	defer cancel()
	st, err := e.client.Process(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// A client-sent header of that name is no stream metadata: only the
	// listener's configuration sets it.
	if err := st.Send(headers(RevisionHeader, demo.String(), HoldPathMetadata, "1")); err != nil {
		t.Fatal(err)
	}
	recv(t, st) // held
	e.waitStats(demo, 2, 0)
	e.srv.ReportHoldPath(rec, HoldPathSource, now, nil)
	want := autoscaler.Sample{Revision: demo, Source: HoldPathSource, Time: now, Concurrency: 1, Requests: 1}
	if got := rec.take(); len(got) != 1 || got[0] != want {
		t.Fatalf("held on the hold path: reported %+v, want [%+v]", got, want)
	}

	// Released to a backend with a slot (container concurrency 1): the
	// stream stays open until the request ends, and it still counts.
	e.setBackends(demo, "127.0.0.1", "127.0.0.2")
	recv(t, st)
	recv(t, plain)
	e.waitStats(demo, 0, 2)
	e.srv.ReportHoldPath(rec, HoldPathSource, now.Add(time.Second), nil)
	want = autoscaler.Sample{Revision: demo, Source: HoldPathSource, Time: now.Add(time.Second), Concurrency: 1}
	if got := rec.take(); len(got) != 1 || got[0] != want {
		t.Fatalf("routed on the hold path: reported %+v, want [%+v]", got, want)
	}
	st.CloseSend()
	wantEnd(t, st)
	e.waitStats(demo, 0, 1)
	// At zero while keep says so (the revision still has backends), then
	// forgotten.
	keep := true
	for i, wantN := range []int{1, 1, 1, 0, 0} {
		if i == 3 {
			keep = false
		}
		e.srv.ReportHoldPath(rec, HoldPathSource, now.Add(time.Duration(2+i)*time.Second),
			func(k revision.Key) bool { return k == demo && keep })
		got := rec.take()
		if len(got) != wantN || (wantN == 1 && (got[0].Concurrency != 0 || got[0].Requests != 0)) {
			t.Fatalf("report %d after the end: %+v, want %d sample(s) at zero", i, got, wantN)
		}
	}
}

// TestHoldPathBounded: past maxHoldPathRevisions revisions, another one
// is not counted (the request itself is unaffected).
func TestHoldPathBounded(t *testing.T) {
	var h holdPath
	h.m = make(map[revision.Key]*holdCount, maxHoldPathRevisions)
	for i := range maxHoldPathRevisions {
		h.m[revision.Key{Namespace: "n", Name: strconv.Itoa(i)}] = &holdCount{}
	}
	if h.enter(demo) {
		t.Fatal("counted one revision past the bound")
	}
	h.leave(demo) // no entry: a no-op
	if _, ok := h.m[demo]; ok {
		t.Fatal("leave made an entry")
	}
}
