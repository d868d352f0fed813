package revision

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// FuzzResolveSplits resolves three splits built from arbitrary hosts,
// member names, percents and tags against two valid revisions. Every Err
// must wrap one of the split errors; a routed split's hosts must be valid
// and its percents sum to 100; no host, tag host or revision belongs to
// two routed splits. `go test` runs only the seeds.
func FuzzResolveSplits(f *testing.F) {
	f.Add("a.example.com,b.example.com", "v1,v2", "t,", uint8(90), uint8(10), "a.example.com", "v2", "")
	f.Add("*.x.example.com", "v1", "canary", uint8(100), uint8(0), "canary-x.example.com", "v1", "c")
	f.Add("A.Example.com:80,a.example.com", "v1,v1", ",", uint8(50), uint8(50), "bad host", "v9", "-")
	f.Add("x.example.com,t-x.example.com", "v1,v2", "t,", uint8(50), uint8(50), "y.example.com", "v1", "")
	f.Fuzz(func(t *testing.T, hosts, members, tags string, p1, p2 uint8, hosts2, members2, tags2 string) {
		build := func(name, hosts, members, tags string, p1, p2 uint8) *splitEntry {
			s := Split{Key: Key{Namespace: "ns", Name: name}}
			for _, h := range strings.Split(hosts, ",") {
				s.Hosts = append(s.Hosts, NormalizeHost(h))
			}
			ts := strings.Split(tags, ",")
			for i, m := range strings.Split(members, ",") {
				tgt := SplitTarget{Revision: Key{Namespace: "ns", Name: m}, Percent: int32(p1)}
				if i > 0 {
					tgt.Percent = int32(p2)
				}
				if i < len(ts) {
					tgt.Tag = ts[i]
				}
				s.Traffic = append(s.Traffic, tgt)
			}
			return &splitEntry{split: s}
		}
		entries := map[Key]*splitEntry{}
		for i, e := range []*splitEntry{build("a", hosts, members, tags, p1, p2), build("b", hosts2, members2, tags2, 100, 0),
			build("c", hosts, members2, tags2, p2, p1)} {
			e.split.Created = time.Unix(int64(i), 0)
			entries[e.split.Key] = e
		}
		valid := func(k Key) bool { return k.Name == "v1" || k.Name == "v2" }
		out := resolveSplits(entries, valid, map[Key]error{{Namespace: "ns", Name: "bad"}: errors.New("bad")})
		hostOwner, revOwner := map[string]Key{}, map[Key]Key{}
		for k, s := range out {
			if s.Err != nil {
				if !errors.Is(s.Err, ErrSplitSpec) && !errors.Is(s.Err, ErrSplitConflict) &&
					!errors.Is(s.Err, ErrSplitRevisionNotFound) && !errors.Is(s.Err, ErrSplitRevisionInvalid) {
					t.Fatalf("split %s: Err %v wraps no split error", k, s.Err)
				}
				continue
			}
			sum := 0
			hs := append([]string(nil), s.Hosts...)
			for _, tg := range s.Traffic {
				sum += int(tg.Percent)
				hs = append(hs, s.TagHosts(tg)...)
				if o, ok := revOwner[tg.Revision]; ok {
					t.Fatalf("revision %s in routed splits %s and %s", tg.Revision, o, k)
				}
				revOwner[tg.Revision] = k
			}
			if sum != MaxTrafficPercent {
				t.Fatalf("routed split %s sums to %d", k, sum)
			}
			for _, h := range hs {
				if msg := checkHost(h); msg != "" {
					t.Fatalf("routed split %s has host %q: %s", k, h, msg)
				}
				if o, ok := hostOwner[h]; ok {
					t.Fatalf("host %q in routed splits %s and %s", h, o, k)
				}
				hostOwner[h] = k
			}
		}
	})
}
