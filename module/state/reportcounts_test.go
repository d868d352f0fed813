package state

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestReportCountsAfterEarly: a revision woken and served only through
// DstCluster is in no Envoy's stats, so the module reports it at zero
// every interval while it has backends; without that the autoscaler has
// no data for it and keeps it up forever (the e2e TestLocalTrafficSplit
// and TestKubeModuleIdleHoldPath symptom: desired 1 with no traffic). It
// stops after a request pinned on the revision's cluster (Envoy's stats
// carry it then), or once an update leaves it without backends. A
// revision never served early is reported once at zero after its last
// request, as before.
func TestReportCountsAfterEarly(t *testing.T) {
	backends := func(key string, unconfirmed bool, addrs ...string) *Update {
		ru := RevisionUpdate{Key: key, QueueDepth: 10, HoldTimeoutMs: 1000}
		for _, a := range addrs {
			ru.Backends = append(ru.Backends, BackendUpdate{Addr: a, Slots: 0, Unconfirmed: unconfirmed})
		}
		return &Update{Revisions: []RevisionUpdate{ru}}
	}
	zero := func(key string) RevisionCounts { return RevisionCounts{Key: key} }
	type step struct {
		name string
		do   func(tab *Table)
		want []RevisionCounts
	}
	var b *Backend
	cases := []struct {
		name  string
		steps []step
	}{
		{"early then idle, then at zero", []step{
			{"early request in flight", func(tab *Table) {
				must(t, tab.Apply(backends("ns/a", true, "127.0.0.1:80")))
				r := tab.Lookup("ns/a")
				b = r.Acquire()
				r.StartEarly()
			}, []RevisionCounts{{Key: "ns/a", InFlight: 1, Early: 1}}},
			{"ended", func(tab *Table) {
				r := tab.Lookup("ns/a")
				r.EndEarly()
				r.Release(b)
			}, []RevisionCounts{zero("ns/a")}},
			{"confirmed, idle", func(tab *Table) {
				must(t, tab.Apply(backends("ns/a", false, "127.0.0.1:80")))
			}, []RevisionCounts{zero("ns/a")}},
			{"still idle", func(*Table) {}, []RevisionCounts{zero("ns/a")}},
			{"scaled to zero", func(tab *Table) {
				must(t, tab.Apply(backends("ns/a", false)))
			}, []RevisionCounts{zero("ns/a")}},
			{"at zero", func(*Table) {}, nil},
		}},
		{"early then pinned on the cluster", []step{
			{"early request ended", func(tab *Table) {
				must(t, tab.Apply(backends("ns/a", true, "127.0.0.1:80")))
				r := tab.Lookup("ns/a")
				b = r.Acquire()
				r.StartEarly()
				r.EndEarly()
				r.Release(b)
			}, []RevisionCounts{zero("ns/a")}},
			{"idle", func(*Table) {}, []RevisionCounts{zero("ns/a")}},
			{"pinned request ended", func(tab *Table) {
				r := tab.Lookup("ns/a")
				b = r.Acquire()
				r.PinnedOnCluster()
				r.Release(b)
			}, []RevisionCounts{zero("ns/a")}},
			{"idle after the pin", func(*Table) {}, nil},
		}},
		{"never early", []step{
			{"request in flight", func(tab *Table) {
				must(t, tab.Apply(backends("ns/a", false, "127.0.0.1:80")))
				b = tab.Lookup("ns/a").Acquire()
				tab.Lookup("ns/a").PinnedOnCluster()
			}, []RevisionCounts{{Key: "ns/a", InFlight: 1}}},
			{"ended", func(tab *Table) { tab.Lookup("ns/a").Release(b) }, []RevisionCounts{zero("ns/a")}},
			{"idle", func(*Table) {}, nil},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tab := NewTable(time.Minute, 10)
			active := map[string]bool{}
			for _, s := range tc.steps {
				s.do(tab)
				got := tab.ReportCounts(active, nil)
				if diff := cmp.Diff(s.want, got); diff != "" {
					t.Fatalf("%s: report (-want +got):\n%s", s.name, diff)
				}
			}
		})
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
