package autoscaler

import (
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/thaw-dev/thaw/revision"
)

// ReasonWarmingUp is the Decision.Reason while a revision's scale is held at
// its current replicas because this Run has not yet seen one full stable
// window (thaw restarted, or this replica just became the leader).
const ReasonWarmingUp = "collecting a full stable window of data since thaw started deciding: no scale-down yet"

// decisionState is one revision's decision state. It holds no goroutine, timer
// or channel: a decision loop decides it.
type decisionState struct {
	key  revision.Key
	rev  atomic.Pointer[revision.Revision]
	loop *loopShard
	// since is when this Run first saw the revision (warm-up floor).
	since time.Time

	atZero     atomic.Bool // last seen replicas were 0 (true until known)
	pokeQueued atomic.Bool // a poke waits in the loop's queue
	applying   atomic.Bool // a SetScale runs; ticks skip the revision
	repoke     atomic.Bool // poked while applying
	// dormant is set by the decision loop when the revision left its due
	// heap, or waits in it for its alarm (dormant.go); the input that clears it (CompareAndSwap) queues
	// the revision back. inputs counts the inputs that woke, or tried to
	// wake, it.
	dormant atomic.Bool
	inputs  atomic.Uint64

	// Owned by the decision loop, or by the scale application while applying.
	due     time.Time // next tick, or alarm while dormant
	heapPos int       // 1 + its index in its loop's due heap; 0 when out of it
	// alarm is when the wake policy's windows next change, set by a tick
	// that settled (zero: none will): a dormant revision stays in its
	// loop's heap until then (dormant.go).
	alarm        time.Time
	gate         Gate
	kpa          KPA
	series       *series     // the collector's, cached (see stableAndPanicCached)
	scale        ScaleReader // the target's handle (ScaleHandles), or nil
	known        bool        // the first GetScale succeeded
	firstCurrent int32       // replicas at the first GetScale
	lastErr      string
	inPanic      bool
	published    publishedKey // what the last published decision is compared on
	hasPublished bool
	lastEBC      int32 // of the last valid decision
	lastInPanic  bool
	hasLastValid bool
	// proxySince and proxyKnown keep the ModeConfirmer's positive answer
	// until proxyStale says the registry entry changed (see ModeConfirmer).
	proxySince time.Time
	proxyKnown bool
	proxyStale atomic.Bool // set by sync, read by the decision loop

	mu        sync.Mutex // guards the fields below
	stopped   bool
	status    Decision
	hasStatus bool
	target    float64 // per-pod target of the last decision
	changes   uint64
	getErrors uint64
	setErrors uint64
}

func newRevState(rev *revision.Revision, now time.Time, sh *loopShard) *decisionState {
	st := &decisionState{key: rev.Key, loop: sh, since: now, gate: *NewGate(now)}
	st.rev.Store(rev)
	st.atZero.Store(true)
	return st
}

// halt stops the revision; nothing is published for it after halt returns.
func (st *decisionState) halt() {
	st.mu.Lock()
	st.stopped = true
	st.mu.Unlock()
}

func (st *decisionState) halted() bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.stopped
}

// latest returns the last decision, published or not.
func (st *decisionState) latest() (Decision, bool) {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.status, st.hasStatus
}

// logger returns the revision's logger. It is built on demand: logs are
// rare, and a logger per revision held for its lifetime costs memory.
func (st *decisionState) logger(m *Multiscaler) *zap.Logger {
	return m.log.With(zap.String("revision", st.key.String()))
}

func (st *decisionState) countError(get bool) {
	st.mu.Lock()
	if get {
		st.getErrors++
	} else {
		st.setErrors++
	}
	st.mu.Unlock()
}

// publishedKey holds the fields of a published decision that decide whether
// the next one is published: a decision is published when its desired or
// recommended scale, WantZero, validity, the sign of its excess burst
// capacity or ActivationTimedOut differ from the last published one. It
// keeps 12 bytes per revision instead of a whole Decision.
type publishedKey struct {
	desired, recommended int32
	wantZero, valid      bool
	negativeEBC          bool
	activationTimedOut   bool
}

func keyOf(d *Decision) publishedKey {
	return publishedKey{desired: d.DesiredScale, recommended: d.Recommended, wantZero: d.WantZero,
		valid: d.Valid, negativeEBC: d.ExcessBurstCapacity < 0, activationTimedOut: d.ActivationTimedOut}
}
