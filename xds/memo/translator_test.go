package memo

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	"github.com/envoyproxy/go-control-plane/pkg/cache/types"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"

	"github.com/thaw-dev/thaw/revision"
	"github.com/thaw-dev/thaw/wake"
	"github.com/thaw-dev/thaw/xds/encoded"
	"github.com/thaw-dev/thaw/xds/translate"
)

// TestMemoisedTranslationMatchesTranslate replays random registry histories
// (mode flips, backends appearing, turning ready and leaving, port, host
// and timeout changes, host collisions, traffic splits valid and invalid,
// tags, revisions added and removed) through the
// translator the server keeps (the EndpointChanges fast path when it
// applies, else the memoised full translation), applying the results the
// way Server.apply does, and checks after every step that the resources
// held equal what the pure Translate makes from the same snapshot. With
// encode, clusters and virtual hosts are held as encodings, as the server
// holds them, and decoded for the comparison.
func TestMemoisedTranslationMatchesTranslate(t *testing.T) {
	for seed := uint64(1); seed <= 8; seed++ {
		inline := seed%2 == 0         // both route layouts: VHDS and InlineRoutes
		encode := seed > 3            // both memo forms with both layouts
		module := seed > 6            // the module's cluster routes (translate.ClusterRoutes), both layouts
		hold := seed%3 != 0 || module // the idle hold path with both layouts and memo forms
		t.Run(fmt.Sprintf("seed=%d/inline=%v/encode=%v/hold=%v/module=%v", seed, inline, encode, hold, module), func(t *testing.T) {
			h := newHistory(seed)
			cfg := testConfig()
			cfg.InlineRoutes = inline
			cfg.IdleHoldPath = hold
			if module {
				cfg.Module = &translate.ModuleConfig{Path: "/opt/thaw/thaw-activator.so", Node: "n",
					StateURL: "http://127.0.0.1:9901/activator/v1/state", ReportURL: "http://127.0.0.1:9901/activator/v1/report"}
			}
			tr, err := New(&cfg, encode)
			if err != nil {
				t.Fatal(err)
			}
			var held map[string]map[string]types.Resource
			var prev *revision.Snapshot
			var skipped map[revision.Key]error
			fast, splits, transitions, fleet := 0, 0, 0, 0
			for step := range 120 {
				snap := h.next()
				changed, ok, err := tr.EndpointChanges(prev, snap, skipped)
				if err != nil {
					t.Fatalf("step %d (%s): EndpointChanges: %v", step, h.last, err)
				}
				if ok && held != nil {
					fast++
					for _, r := range changed {
						if applyFastChange(t, tr, held, r.Key) {
							transitions++
						}
					}
				} else {
					res, _ := tr.Translate(snap)
					if res == nil {
						t.Fatalf("step %d (%s): memoised translation failed", step, h.last)
					}
					held, skipped = decodedByType(t, res), res.Skipped
				}
				prev = snap
				want, _ := translate.Translate(snap, cfg)
				if want == nil {
					t.Fatalf("step %d (%s): Translate failed", step, h.last)
				}
				if hasSplit(want) {
					splits++
				}
				if len(snap.Splits) > len(want.SkippedSplits) {
					fleet++ // a fleet split routed
				}
				if wantBy := want.ByType(); !sameResources(wantBy, held) {
					t.Fatalf("step %d (%s): memoised resources differ from Translate (-want +got):\n%s", step, h.last,
						cmp.Diff(wantBy, held, protocmp.Transform()))
				}
				checkConfirmRefs(t, tr, &cfg, encode, snap, step, h.last)
			}
			if fast == 0 {
				t.Errorf("the fast path never ran: the history does not test it")
			}
			if transitions == 0 && hold && !inline { // inline routes: every transition is a full translation
				t.Errorf("no revision woke or went idle on the fast path: the history does not test it")
			}
			if splits == 0 {
				t.Errorf("no step had a valid traffic split: the history does not test them")
			}
			if fleet == 0 {
				t.Errorf("no step routed a fleet split (revision.Split): the history does not test them")
			}
		})
	}
}

// The wake policies of the history: one with a rule, one with only the
// cold-start header.
var (
	readingPolicy = mustCompile(&wake.Config{Rules: []wake.RuleConfig{{Name: "robots", Path: "^/robots[.]txt$"}}})
	headerPolicy  = mustCompile(&wake.Config{ColdStartHeader: true})
)

func mustCompile(c *wake.Config) *wake.Policy {
	p, errs := wake.Compile(c)
	if len(errs) > 0 {
		panic(fmt.Sprint(errs))
	}
	return p
}

// history makes random changes and publishes them through a real
// registry, so the snapshots (shared maps, the log of changed keys behind
// Snapshot.Changes) are the ones the server gets.
type history struct {
	rng  *rand.Rand
	revs map[revision.Key]*revision.Revision
	reg  *revision.Registry
	gen  uint64
	last string // the last change, for failure messages
	// steps counts next calls: fleet splits change in one step of four
	// batches of ten, so the others keep their fast-path share.
	steps int
}

func newHistory(seed uint64) *history {
	h := &history{rng: rand.New(rand.NewPCG(seed, 42)), revs: map[revision.Key]*revision.Revision{},
		reg: revision.NewRegistry(revision.RegistryOptions{})}
	h.reg.SetSynced()
	for i := range 20 {
		h.add(i)
	}
	return h
}

func (h *history) key(i int) revision.Key {
	return revision.Key{Namespace: []string{"a", "b"}[i%2], Name: fmt.Sprintf("r%02d", i)}
}

// host picks from a small pool so that revisions sometimes collide.
func (h *history) host() string { return fmt.Sprintf("h%02d.example.com", h.rng.IntN(40)) }

func (h *history) add(i int) {
	spec := revision.DefaultSpec()
	spec.Hosts = []string{h.host()}
	spec.Port = 8000
	h.gen++
	h.revs[h.key(i)] = &revision.Revision{Key: h.key(i), Spec: spec, Mode: revision.Mode(h.rng.IntN(2)),
		DesiredScale: -1, Generation: h.gen}
}

func (h *history) backend() revision.Backend {
	return revision.Backend{Address: fmt.Sprintf("10.0.%d.%d", h.rng.IntN(3), 1+h.rng.IntN(5)),
		Port: []int32{0, 8080, 8081}[h.rng.IntN(3)], Ready: h.rng.IntN(3) > 0} // port 0: the spec's
}

// next applies one to three random changes and returns the new snapshot.
func (h *history) next() *revision.Snapshot {
	h.last = ""
	for range 1 + h.rng.IntN(3) {
		i := h.rng.IntN(26)
		k := h.key(i)
		old := h.revs[k]
		if old == nil {
			h.add(i)
			h.last += fmt.Sprintf("add %s; ", k)
			continue
		}
		r := *old
		switch op := h.rng.IntN(15); op {
		case 0, 1, 2:
			r.Mode = 1 - r.Mode
			h.last += fmt.Sprintf("flip %s to %s; ", k, r.Mode)
		case 3, 4:
			bs := slices.Clone(r.Backends)
			if len(bs) > 0 && h.rng.IntN(2) == 0 {
				bs = slices.Delete(bs, 0, 1)
			} else {
				bs = append(bs, h.backend())
			}
			r.Backends = uniqueSorted(bs)
			h.last += fmt.Sprintf("backends of %s: %v; ", k, r.Backends)
		case 5:
			if len(r.Backends) > 0 {
				bs := slices.Clone(r.Backends)
				j := h.rng.IntN(len(bs))
				bs[j].Ready = !bs[j].Ready
				r.Backends = bs
				h.last += fmt.Sprintf("readiness in %s; ", k)
			}
		case 6:
			r.Spec.Port = int32(8000 + h.rng.IntN(3))
			h.last += fmt.Sprintf("port of %s: %d; ", k, r.Spec.Port)
		case 7:
			r.Spec.Hosts = []string{h.host(), h.host()}
			h.last += fmt.Sprintf("hosts of %s: %v; ", k, r.Spec.Hosts)
		case 8:
			r.DesiredScale = int32(h.rng.IntN(5)) // not routing: same generation
			h.revs[k] = &r
			h.last += fmt.Sprintf("desired scale of %s; ", k)
			continue
		case 9:
			delete(h.revs, k)
			h.last += fmt.Sprintf("delete %s; ", k)
			continue
		case 10:
			r.Spec.TrafficPercent = []*int32{nil, pct(0), pct(10), pct(50), pct(90), pct(100)}[h.rng.IntN(6)]
			h.last += fmt.Sprintf("traffic percent of %s: %v; ", k, pctString(r.Spec.TrafficPercent))
		case 11:
			// A valid split: another revision joins r's first host, the
			// two percents summing to 100.
			q := h.other(k)
			if q == nil {
				continue
			}
			p := int32(h.rng.IntN(101))
			r.Spec.TrafficPercent = pct(p)
			qc := *q
			qc.Spec.Hosts = []string{r.Spec.Hosts[0]}
			qc.Spec.TrafficPercent = pct(100 - p)
			h.gen++
			qc.Generation = h.gen
			h.revs[q.Key] = &qc
			h.last += fmt.Sprintf("split %s %d%% / %s %d%% on %s; ", k, p, q.Key, 100-p, r.Spec.Hosts[0])
		case 12:
			r.Spec.Tag = []string{"", "t", "canary"}[h.rng.IntN(3)]
			h.last += fmt.Sprintf("tag of %s: %q; ", k, r.Spec.Tag)
		case 13:
			// no policy, one that reads requests (thaw_activator_wake),
			// one that does not (thaw_activator)
			r.Spec.Wake = []*wake.Policy{nil, readingPolicy, headerPolicy}[h.rng.IntN(3)]
			h.last += fmt.Sprintf("wake policy of %s: reads requests %v; ", k, r.Spec.Wake.ReadsRequests())
		default:
			r.Spec.RequestTimeout = time.Duration(1+h.rng.IntN(3)) * time.Minute
			h.last += fmt.Sprintf("request timeout of %s: %s; ", k, r.Spec.RequestTimeout)
		}
		h.gen++
		r.Generation = h.gen
		h.revs[k] = &r
	}
	h.steps++
	if h.steps%40 >= 30 && h.rng.IntN(2) == 0 {
		h.splitStep()
	}
	// Holdoff 0: every setter that changes something publishes, so one
	// step may span several publications (Changes merges their logs).
	for i := range 26 {
		k := h.key(i)
		r := h.revs[k]
		if r == nil {
			h.reg.Delete(k)
			continue
		}
		h.reg.Upsert(k, r.Spec)
		h.reg.SetBackends(k, r.Backends)
		h.reg.SetMode(k, r.Mode)
		h.reg.SetDesiredScale(k, r.DesiredScale)
	}
	return h.reg.Snapshot()
}

// hasSplit reports whether r routes a split host (weighted clusters).
func hasSplit(r *translate.Resources) bool {
	for _, vh := range virtualHosts(r) {
		if vh.GetRoutes()[0].GetRoute().GetWeightedClusters() != nil {
			return true
		}
	}
	return false
}

// other returns a revision other than k, or nil.
func (h *history) other(k revision.Key) *revision.Revision {
	for range 5 {
		if q := h.revs[h.key(h.rng.IntN(26))]; q != nil && q.Key != k {
			return q
		}
	}
	return nil
}

func pct(p int32) *int32 { return &p }

func pctString(p *int32) string {
	if p == nil {
		return "none"
	}
	return fmt.Sprint(*p)
}

// uniqueSorted sorts backends by address and port (as the registry does)
// and drops duplicate addresses.
func uniqueSorted(bs []revision.Backend) []revision.Backend {
	slices.SortFunc(bs, func(a, b revision.Backend) int {
		if a.Address != b.Address {
			return compareStr(a.Address, b.Address)
		}
		return int(a.Port - b.Port)
	})
	return slices.CompactFunc(bs, func(a, b revision.Backend) bool { return a.Address == b.Address && a.Port == b.Port })
}

func compareStr(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// decodedByType is res.ByType with the resources res holds as encodings
// decoded.
func decodedByType(t *testing.T, res *Translation) map[string]map[string]types.Resource {
	t.Helper()
	out := res.ByType()
	for typ, enc := range res.Encoded {
		if len(out[typ]) != 0 {
			t.Fatalf("%s: both messages and encodings", typ)
		}
		for name, e := range enc {
			eb, ev, err := e.Get() // encodes a lazy host
			if err != nil {
				t.Fatal(err)
			}
			m, err := encoded.Decode(typ, eb)
			if err != nil {
				t.Fatal(err)
			}
			if b, v, err := encoded.Hash(m); err != nil || v != ev || !slices.Equal(b, eb) {
				t.Fatalf("%s %s: version %s does not match its encoding (%v)", typ, name, ev, err)
			}
			out[typ][name] = m
		}
	}
	return out
}

// sameResources reports whether a and b hold equal resources under the
// same types and names.
func sameResources(a, b map[string]map[string]types.Resource) bool {
	if len(a) != len(b) {
		return false
	}
	for typ, as := range a {
		bs := b[typ]
		if len(as) != len(bs) {
			return false
		}
		for name, r := range as {
			o, ok := bs[name]
			if !ok || (o != r && !proto.Equal(o, r)) {
				return false
			}
		}
	}
	return true
}

// testConfig is the config of translate's golden files.
func testConfig() translate.Config {
	cfg := translate.DefaultConfig()
	cfg.HTTPAddress = "127.0.0.1"
	cfg.HTTPPort = 18080
	return cfg
}

// virtualHosts returns r's virtual hosts, over VHDS or inline.
func virtualHosts(r *translate.Resources) []*routev3.VirtualHost {
	if len(r.VirtualHosts) > 0 {
		return r.VirtualHosts
	}
	return r.Routes[0].GetVirtualHosts()
}

// applyFastChange applies one revision of the fast path to held as the
// server does (applyEndpoints, applyTransitions): its endpoints, and for
// a revision waking or going idle its cluster and virtual host (then it
// returns true).
func applyFastChange(t *testing.T, tr *Translator, held map[string]map[string]types.Resource, key revision.Key) bool {
	t.Helper()
	decoded := func(typeURL string, msg types.Resource, enc *encoded.Resource) types.Resource {
		if enc == nil {
			return msg
		}
		b, _, err := enc.Get()
		if err != nil {
			t.Fatal(err)
		}
		d, err := encoded.Decode(typeURL, b)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	name := tr.ClusterName(key)
	_, had := held[resourcev3.ClusterType][name]
	_, idle := tr.Confirm(key)
	if idle == !had { // no transition: its endpoints at most
		if cla := tr.LoadAssignment(key); cla != nil {
			held[resourcev3.EndpointType][name] = cla
		}
		return false
	}
	x, ok, err := tr.Transition(key)
	if err != nil || !ok {
		t.Fatalf("Transition(%s): %v, %v", key, ok, err)
	}
	if !x.KeepsRoutes { // as the server: cluster routes change no virtual host
		held[resourcev3.VirtualHostType][x.VirtualHostName] = decoded(resourcev3.VirtualHostType, x.VirtualHost, x.VirtualHostEnc)
	}
	if x.Idle {
		delete(held[resourcev3.ClusterType], name)
		delete(held[resourcev3.EndpointType], name)
	} else {
		held[resourcev3.ClusterType][name] = decoded(resourcev3.ClusterType, x.Cluster, x.ClusterEnc)
		held[resourcev3.EndpointType][name] = x.Endpoints
	}
	return true
}

// splitStep sets or deletes one of three fleet splits (RevisionSplits
// with hosts) in namespace "a": hosts from the revisions' pool (so they
// take hosts from revisions), two members that may be missing, in
// another split, or idle, percents summing to 100 (sometimes not), tags.
func (h *history) splitStep() {
	key := revision.Key{Namespace: "a", Name: fmt.Sprintf("s%d", h.rng.IntN(3))}
	if h.rng.IntN(4) == 0 {
		h.reg.DeleteSplit(key)
		h.last += fmt.Sprintf("delete split %s; ", key)
		return
	}
	p := int32(h.rng.IntN(101))
	q := 100 - p
	if h.rng.IntN(6) == 0 {
		q++ // an invalid sum
	}
	first := h.rng.IntN(13)
	s := revision.Split{Key: key, Hosts: []string{h.host()}, Traffic: []revision.SplitTarget{
		{Revision: h.key(2 * first), Percent: p, Tag: []string{"", "t"}[h.rng.IntN(2)]},
		{Revision: h.key(2 * ((first + 1 + h.rng.IntN(12)) % 13)), Percent: q}, // another
	}}
	h.reg.SetSplit(s)
	h.last += fmt.Sprintf("split %s on %v: %s; ", key, s.Hosts, s.Describe())
}

// checkConfirmRefs checks that tr confirms every revision of snap by the
// resource a fresh full translation of snap names (memo.Confirm), so a
// revision that went idle on the fast path (a split member too, with
// cluster routes) is confirmed as after a full Translation.
func checkConfirmRefs(t *testing.T, tr *Translator, cfg *translate.Config, encode bool, snap *revision.Snapshot, step int, last string) {
	t.Helper()
	fresh, err := New(cfg, encode)
	if err != nil {
		t.Fatal(err)
	}
	if res, _ := fresh.Translate(snap); res == nil {
		t.Fatalf("step %d (%s): fresh translation failed", step, last)
	}
	for k := range fresh.memo {
		want, wantIdle := fresh.Confirm(k)
		got, gotIdle := tr.Confirm(k)
		if want != got || wantIdle != gotIdle {
			t.Fatalf("step %d (%s): Confirm(%s) = %+v, %v; a full translation gives %+v, %v", step, last, k, got, gotIdle, want, wantIdle)
		}
	}
}
