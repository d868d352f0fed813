package statsink

import (
	"math"
	"sync"
	"time"

	"go.uber.org/zap"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/thaw-dev/thaw/autoscaler"
	"github.com/thaw-dev/thaw/revision"
)

const (
	// maxClockSkew bounds how far Envoy's timestamp_ms may be from the
	// receive time before the receive time is used instead.
	maxClockSkew = time.Minute
	// staleFlushes is how many flushes a cluster may be absent before its
	// state (counter base) is forgotten (about 5 minutes at 1 s flushes).
	staleFlushes = 300
	// logEvery is the minimum interval between bad-input logs of one node.
	logEvery = time.Minute
)

// entry is the state of one revision cluster as seen from one node. Only
// clusters of revisions the registry knows get one (Limits.Known): other
// names cost a lookup per metric and no memory.
type entry struct {
	name string // the cluster, as in node.entries
	key  revision.Key
	gone bool // removed from node.entries (node.order may still hold it)
	// noHistory: the entry was created while the node's metrics of unknown
	// revisions were being dropped, so an earlier flush may have carried
	// this cluster: its first counter value only sets the base.
	noHistory bool

	// Values of the message being processed (valid when msg == node.msgSeq).
	msg                             uint64
	active, pending, total          float64
	hasActive, hasPending, hasTotal bool

	base    float64 // last upstream_rq_total value
	hasBase bool
	seenGen uint64 // last flush the cluster was present in
	zeroed  bool   // a zero sample was sent since it went missing
	// ref is the recorder's cache for this revision and node
	// (autoscaler.BatchSample.Ref).
	ref autoscaler.Ref
}

// node is the state of one Envoy (node id), shared by its streams and kept
// for NodeExpiry after its last stream ends so a reconnect continues.
type node struct {
	id   string
	sink *Server
	log  *zap.Logger

	// Guarded by Server.mu.
	streams    int
	epoch      uint64
	expiryStop chan struct{}

	mu       sync.Mutex
	entries  map[string]*entry
	gen      uint64 // flush generation, incremented when timestamp_ms changes
	flushKey int64
	// seenCur and seenPrev count the entries whose seenGen is gen and gen-1:
	// when they add up to len(entries), no cluster is missing from the
	// previous flush and emit skips its walk over every entry (a cache miss
	// per entry at 10k revisions).
	seenCur, seenPrev int
	// baseGen: clusters first seen in a flush <= baseGen only set a counter
	// base (their history is unknown: first flush after a (re)connect).
	baseGen uint64
	msgSeq  uint64
	touched []*entry
	// order is the entries in the order the previous messages named them:
	// Envoy writes a flush's stats in the same order every time (its stats
	// store's iteration order, which changes only when stats are added or
	// removed), so the metric at position i of a message is usually
	// order[i]'s, and one name comparison replaces the map lookup. A wrong
	// guess costs that comparison. Bounded by 4 per entry (see point).
	order   []*entry
	batch   autoscaler.Batch // reused by emit and zeroAll
	reader  msgReader        // reused by ingestParts
	bad     badCounts        // since the last log
	lastLog time.Time
	// unknownGen is the last flush in which a metric of an unknown
	// revision was dropped (0: never).
	unknownGen uint64
}

// msgCtx is the per-message state of node.ingest.
type msgCtx struct {
	now      time.Time
	time     time.Time // sample time: Envoy's snapshot time or now
	started  bool      // flush generation decided
	newFlush bool
	pos      int // index in node.order of the next metric
	bad      badCounts
}

// ingest processes one raw StreamMetricsMessage and records its samples.
func (n *node) ingest(msg []byte, now time.Time) { n.ingestParts([][]byte{msg}, now) }

// ingestParts is ingest of a message in consecutive parts (gRPC's frames).
func (n *node) ingestParts(parts [][]byte, now time.Time) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.msgSeq++
	n.touched = n.touched[:0]
	mc := msgCtx{now: now, time: now}
	r := &n.reader
	r.reset(parts)
	for r.more() {
		num, wt, fam, err := r.next()
		if err != nil {
			mc.bad[reasonMalformed]++
			break
		}
		if num != fieldMsgEnvoyMetrics || wt != protowire.BytesType {
			continue
		}
		if err := n.family(fam, &mc); err != nil {
			mc.bad[reasonMalformed]++
			break
		}
	}
	r.reset(nil)
	n.emit(&mc)
	n.sink.m.messages.Inc()
	n.noteBad(&mc.bad, now)
}

// family processes one MetricFamily in one pass over its fields. A family
// thaw does not read is dropped as soon as its name is known: Envoy writes
// the name first, so after one comparison. (A repeated name field is decided
// by its first occurrence, which only a hand-made message can notice.)
func (n *node) family(b []byte, mc *msgCtx) error {
	fam, typ, metric, metrics, ok := envoyFamily(b)
	if !ok {
		var err error
		if fam, typ, metric, metrics, err = parseFamily(b); err != nil {
			return err
		}
	}
	if fam == familyOther {
		return nil
	}
	if typ > typeMaxKnown {
		mc.bad[reasonUnknownType]++
		return nil
	}
	valueField, want := fieldMetricGauge, uint64(typeGauge)
	if fam == familyTotal {
		valueField, want = fieldMetricCounter, typeCounter
	}
	if typ != want {
		mc.bad[reasonWrongType]++
		return nil
	}
	var p point
	if metrics == 1 {
		if err := decodeMetric(metric, valueField, &p); err != nil {
			return err
		}
		n.point(fam, &p, mc)
		return nil
	}
	for len(b) > 0 {
		f, rest, err := nextField(b)
		if err != nil {
			return err
		}
		b = rest
		if f.num != fieldFamilyMetric || f.typ != protowire.BytesType {
			continue
		}
		if err := decodeMetric(f.bytes, valueField, &p); err != nil {
			return err
		}
		n.point(fam, &p, mc)
	}
	return nil
}

// point applies one metric to its cluster's entry.
func (n *node) point(fam family, p *point, mc *msgCtx) {
	if !mc.started {
		n.startFlush(p.timestampMs, mc)
	}
	switch {
	case !p.hasValue:
		mc.bad[reasonWrongType]++
		return
	case math.IsNaN(p.value) || math.IsInf(p.value, 0):
		mc.bad[reasonNotFinite]++
		return
	case p.value < 0:
		mc.bad[reasonNegative]++
		return
	case p.cluster == nil:
		mc.bad[reasonNoClusterLabel]++
		return
	}
	i := mc.pos
	mc.pos++
	var e *entry
	if i < len(n.order) {
		if h := n.order[i]; h != nil && !h.gone && h.name == string(p.cluster) {
			e = h
		}
	}
	if e == nil {
		e = n.entries[string(p.cluster)] // no allocation for the lookup
		if e == nil {
			e = n.newEntry(p.cluster, mc)
		}
		switch {
		case i < len(n.order):
			n.order[i] = e
		case i == len(n.order) && i < 4*len(n.entries)+64:
			n.order = append(n.order, e)
		}
		if e == nil {
			return
		}
	}
	if e.seenGen != n.gen {
		if e.seenGen+1 == n.gen {
			n.seenPrev--
		}
		e.seenGen = n.gen
		n.seenCur++
	}
	if e.msg != n.msgSeq {
		e.msg = n.msgSeq
		e.hasActive, e.hasPending, e.hasTotal = false, false, false
		n.touched = append(n.touched, e)
	}
	switch fam {
	case familyActive:
		e.active, e.hasActive = p.value, true
	case familyPending:
		e.pending, e.hasPending = p.value, true
	case familyTotal:
		e.total, e.hasTotal = p.value, true
	}
}

// newEntry creates the entry of a cluster seen for the first time, or
// returns nil for a cluster that gets none: not a revision cluster, a
// revision the registry does not know, or beyond MaxClustersPerNode.
func (n *node) newEntry(cluster []byte, mc *msgCtx) *entry {
	key, ok := revision.RevisionFromCluster(string(cluster))
	if !ok {
		return nil // thaw_xds, thaw_activator_dst...: not read
	}
	if !n.sink.known(key) {
		mc.bad[reasonUnknownRevision]++
		n.unknownGen = n.gen
		return nil
	}
	if len(n.entries) >= n.sink.lim.MaxClustersPerNode {
		mc.bad[reasonTooManyClusters]++
		return nil
	}
	name := string(cluster)
	e := &entry{name: name, key: key, noHistory: n.unknownGen != 0 && n.unknownGen+1 >= n.gen, seenGen: n.gen}
	n.entries[name] = e
	n.seenCur++
	return e
}

// startFlush decides, at the first metric of a message, whether the message
// starts a new flush: Envoy stamps every metric of one flush with the same
// snapshot time, so a new timestamp means a new flush (with batch_size set, a
// flush spans several messages with one timestamp).
func (n *node) startFlush(tsMs int64, mc *msgCtx) {
	mc.started = true
	key := tsMs
	if tsMs > 0 {
		t := time.UnixMilli(tsMs)
		if d := t.Sub(mc.now); d > maxClockSkew || d < -maxClockSkew {
			mc.bad[reasonTimestamp]++
			key = mc.now.UnixMilli()
		} else {
			mc.time = t
		}
	} else {
		key = mc.now.UnixMilli()
	}
	if n.gen == 0 || key != n.flushKey {
		n.gen++
		n.seenPrev, n.seenCur = n.seenCur, 0
		n.flushKey = key
		mc.newFlush = true
	}
}

// emit records one sample per revision touched by the message and, at the
// start of a flush, a zero sample for revisions absent from the whole
// previous flush, all in one autoscaler.Batch.
func (n *node) emit(mc *msgCtx) {
	m := n.sink.m
	resets := 0
	n.batch.Source, n.batch.Time = n.id, mc.time
	n.batch.Samples = n.batch.Samples[:0]
	for _, e := range n.touched {
		var conc, req float64
		if e.hasActive {
			conc += e.active
		}
		if e.hasPending {
			conc += e.pending
		}
		if e.hasTotal {
			switch {
			case !e.hasBase:
				// Envoy sends only stats that were written, so a counter that
				// appears after the first flush of a stream was written since
				// the previous flush: all of it is new.
				if n.gen > n.baseGen && !e.noHistory {
					req = e.total
				}
			case e.total >= e.base:
				req = e.total - e.base
			default:
				// Envoy restarted or recreated the stat. Its value counts an
				// unknown period: take it as the new base, never a negative delta.
				resets++
			}
			e.base, e.hasBase = e.total, true
		}
		e.zeroed = false
		n.batch.Samples = append(n.batch.Samples, autoscaler.BatchSample{Revision: e.key,
			Concurrency: conc, Requests: req, Ref: &e.ref})
	}
	if mc.newFlush && n.gen >= 2 && n.seenCur+n.seenPrev < len(n.entries) {
		for name, e := range n.entries {
			if e.seenGen+1 >= n.gen {
				continue
			}
			if !e.zeroed {
				e.zeroed = true
				n.batch.Samples = append(n.batch.Samples, autoscaler.BatchSample{Revision: e.key, Ref: &e.ref})
			}
			if e.seenGen+staleFlushes < n.gen {
				delete(n.entries, name)
				e.gone = true
			}
		}
	}
	n.record()
	if resets > 0 {
		m.counterResets.Add(float64(resets))
	}
}

// record hands n.batch to the recorder, counts its samples and empties it.
func (n *node) record() {
	if len(n.batch.Samples) == 0 {
		return
	}
	autoscaler.RecordBatch(n.sink.rec, &n.batch)
	n.sink.m.samples.Add(float64(len(n.batch.Samples)))
	clear(n.batch.Samples) // drop the Refs' pointers into entries
	n.batch.Samples = n.batch.Samples[:0]
}

// zeroAll records a zero sample for every revision the node reported: its
// Envoy is gone, and so are the requests it had in flight.
func (n *node) zeroAll(now time.Time) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.batch.Source, n.batch.Time = n.id, now
	n.batch.Samples = n.batch.Samples[:0]
	for _, e := range n.entries {
		if !e.zeroed {
			e.zeroed = true
			n.batch.Samples = append(n.batch.Samples, autoscaler.BatchSample{Revision: e.key, Ref: &e.ref})
		}
	}
	n.record()
}

// noteBad counts bad input and logs it at most once per logEvery per node,
// with the counts accumulated since the previous log.
func (n *node) noteBad(b *badCounts, now time.Time) {
	if !b.any() {
		return
	}
	n.sink.m.addBad(b)
	for r, c := range b {
		n.bad[r] += c
	}
	if !n.lastLog.IsZero() && now.Sub(n.lastLog) < logEvery {
		return
	}
	n.lastLog = now
	n.log.Warn("bad stats input from Envoy (logged at most once a minute per node)", badFields(&n.bad)...)
	n.bad = badCounts{}
}

func badFields(b *badCounts) []zap.Field {
	fields := make([]zap.Field, 0, numReasons)
	for r, c := range b {
		if c > 0 {
			fields = append(fields, zap.Int(reason(r).String(), c))
		}
	}
	return fields
}
