package translate

import (
	"time"

	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/testing/protocmp"
	"sigs.k8s.io/yaml"

	"github.com/thaw-dev/thaw/revision"
	"github.com/thaw-dev/thaw/wake"
	"github.com/thaw-dev/thaw/xds/internal/xdstest"
)

var update = flag.Bool("update", false, "rewrite golden files under testdata/")

// testConfig is the config every golden file uses.
func testConfig() Config {
	cfg := DefaultConfig()
	cfg.HTTPAddress = "127.0.0.1"
	cfg.HTTPPort = 18080
	return cfg
}

// Shared test builders (xdstest).
var (
	rev           = xdstest.Rev
	snapshotOf    = xdstest.SnapshotOf
	ready         = xdstest.Ready
	benchSnapshot = xdstest.BenchSnapshot
)

// percent returns a traffic percent.
func percent(p int32) *int32 { return &p }

// mustWake compiles c.
func mustWake(c *wake.Config) *wake.Policy {
	p, errs := wake.Compile(c)
	if len(errs) > 0 {
		panic(errors.Join(errs...))
	}
	return p
}

// withSpec applies edit to r's spec and returns r.
func withSpec(r *revision.Revision, edit func(*revision.Spec)) *revision.Revision {
	edit(&r.Spec)
	return r
}

func TestTranslateGolden(t *testing.T) {
	tests := []struct {
		name    string
		snap    *revision.Snapshot
		wantErr error
		// inline sets Config.InlineRoutes (state-of-the-world Envoys).
		inline bool
		// hold sets Config.IdleHoldPath.
		hold bool
	}{
		{name: "empty", snap: snapshotOf()},
		{name: "serve", snap: snapshotOf(rev("default", "hello", revision.ModeServe, []string{"hello.example.com"},
			ready("10.0.0.1", 8080), revision.Backend{Address: "10.0.0.2", Port: 8080}, ready("10.0.0.3", 0)))},
		{name: "proxy", snap: snapshotOf(rev("default", "hello", revision.ModeProxy, []string{"hello.example.com"},
			ready("10.0.0.1", 8080)))},
		{name: "several", snap: snapshotOf(
			rev("team-b", "api", revision.ModeServe, []string{"API.example.com", "*.api.example.com"}, ready("10.0.1.1", 9000)),
			rev("team-a", "web.v2", revision.ModeProxy, []string{"web.example.com"}),
			rev("team-a", "batch", revision.ModeServe, []string{"batch.example.com"}, ready("fd00::1", 8080), ready("10.0.2.1", 8080)),
		)},
		{name: "protocols", snap: snapshotOf(
			withSpec(rev("default", "grpc", revision.ModeServe, []string{"grpc.example.com"}, ready("10.0.0.1", 9000)),
				func(s *revision.Spec) { s.Protocol = revision.ProtocolH2C }),
			withSpec(rev("default", "poll", revision.ModeProxy, []string{"poll.example.com"}),
				func(s *revision.Spec) { s.RequestTimeout = 10 * time.Minute; s.IdleTimeout = 90 * time.Second }),
		)},
		// Only a wake policy that reads requests (rules, waiting page)
		// moves the revision's proxy endpoint to thaw_activator_wake; a
		// cold-start header alone stays on thaw_activator.
		{name: "wake", snap: snapshotOf(
			withSpec(rev("default", "bots", revision.ModeProxy, []string{"bots.example.com"}, ready("10.0.0.1", 8080)),
				func(s *revision.Spec) {
					s.Wake = mustWake(&wake.Config{Rules: []wake.RuleConfig{{Name: "robots", Path: "^/robots[.]txt$"}}})
				}),
			withSpec(rev("default", "header", revision.ModeProxy, []string{"header.example.com"}),
				func(s *revision.Spec) { s.Wake = mustWake(&wake.Config{ColdStartHeader: true}) }),
			rev("default", "plain", revision.ModeProxy, []string{"plain.example.com"}),
		)},
		{name: "no_backends", snap: snapshotOf(rev("default", "cold", revision.ModeServe, []string{"cold.example.com"},
			revision.Backend{Address: "10.0.0.9", Port: 8080, Ready: false}))},
		{name: "split", snap: snapshotOf(
			withSpec(rev("shop", "v1", revision.ModeServe, []string{"shop.example.com", "www.shop.example.com"}, ready("10.0.0.1", 8080)),
				func(s *revision.Spec) { s.TrafficPercent = percent(90) }),
			withSpec(rev("shop", "v2", revision.ModeProxy, []string{"shop.example.com", "www.shop.example.com"}),
				func(s *revision.Spec) {
					s.TrafficPercent, s.Tag = percent(10), "canary"
					s.RequestTimeout, s.IdleTimeout = 10*time.Minute, time.Minute
				}),
			withSpec(rev("shop", "v3", revision.ModeProxy, []string{"shop.example.com", "www.shop.example.com"}),
				func(s *revision.Spec) { s.TrafficPercent, s.Tag = percent(0), "next" }),
			rev("other", "solo", revision.ModeServe, []string{"solo.example.com"}, ready("10.0.0.9", 80)),
		)},
		{name: "split_invalid", wantErr: ErrInvalidSplit, snap: snapshotOf(
			withSpec(rev("shop", "v1", revision.ModeServe, []string{"shop.example.com"}, ready("10.0.0.1", 8080)),
				func(s *revision.Spec) { s.TrafficPercent = percent(80) }),
			withSpec(rev("shop", "v2", revision.ModeProxy, []string{"shop.example.com"}),
				func(s *revision.Spec) { s.TrafficPercent = percent(10) }),
			rev("other", "solo", revision.ModeServe, []string{"solo.example.com"}, ready("10.0.0.9", 80)),
		)},
		{name: "inline_routes", inline: true, snap: snapshotOf(
			rev("team-b", "api", revision.ModeServe, []string{"api.example.com", "*.api.example.com"}, ready("10.0.1.1", 9000)),
			withSpec(rev("shop", "v1", revision.ModeServe, []string{"shop.example.com"}, ready("10.0.0.1", 8080)),
				func(s *revision.Spec) { s.TrafficPercent = percent(90) }),
			withSpec(rev("shop", "v2", revision.ModeProxy, []string{"shop.example.com"}),
				func(s *revision.Spec) { s.TrafficPercent = percent(10) }),
		)},
		// The hold path (hold.go): idle revisions (no backend) have no
		// cluster and lead to thaw_hold (h2c: thaw_hold_h2c); a starting
		// backend (not ready) brings the cluster back; an idle split
		// member's weighted cluster leads to thaw_hold.
		{name: "idle_hold", hold: true, snap: snapshotOf(
			rev("default", "awake", revision.ModeServe, []string{"awake.example.com"}, ready("10.0.0.1", 8080)),
			rev("default", "cold", revision.ModeProxy, []string{"cold.example.com"}),
			rev("default", "starting", revision.ModeProxy, []string{"starting.example.com"},
				revision.Backend{Address: "10.0.0.2", Port: 8080}),
			withSpec(rev("default", "grpc", revision.ModeProxy, []string{"grpc.example.com"}),
				func(s *revision.Spec) { s.Protocol = revision.ProtocolH2C }),
		)},
		{name: "idle_hold_split", hold: true, snap: snapshotOf(
			withSpec(rev("shop", "v1", revision.ModeServe, []string{"shop.example.com"}, ready("10.0.0.1", 8080)),
				func(s *revision.Spec) { s.TrafficPercent = percent(90) }),
			withSpec(rev("shop", "v2", revision.ModeProxy, []string{"shop.example.com"}),
				func(s *revision.Spec) { s.TrafficPercent, s.Tag = percent(10), "canary" }),
			withSpec(rev("shop", "v3", revision.ModeProxy, []string{"shop.example.com"}),
				func(s *revision.Spec) { s.TrafficPercent, s.Tag = percent(0), "next" }),
		)},
		{name: "host_collision", wantErr: ErrHostCollision, snap: snapshotOf(
			rev("b", "second", revision.ModeServe, []string{"dup.example.com", "only-b.example.com"}, ready("10.0.0.2", 80)),
			rev("a", "first", revision.ModeServe, []string{"DUP.example.com"}, ready("10.0.0.1", 80)),
			rev("c", "third", revision.ModeProxy, []string{"c.example.com"}),
		)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := testConfig()
			cfg.InlineRoutes = tt.inline
			cfg.IdleHoldPath = tt.hold
			res, err := Translate(tt.snap, cfg)
			if tt.wantErr == nil && err != nil {
				t.Fatalf("Translate: %v", err)
			}
			if tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Fatalf("Translate error = %v, want errors.Is %v", err, tt.wantErr)
			}
			if res == nil {
				t.Fatal("Translate returned nil resources")
			}
			checkGolden(t, filepath.Join("testdata", "translate_"+tt.name+".yaml"), goldenYAML(t, res))
		})
	}
}

func TestTranslateHostCollisionNamesBoth(t *testing.T) {
	snap := snapshotOf(
		rev("b", "second", revision.ModeServe, []string{"dup.example.com"}),
		rev("a", "first", revision.ModeServe, []string{"dup.example.com"}),
	)
	res, err := Translate(snap, testConfig())
	var hc *HostCollisionError
	if !errors.As(err, &hc) {
		t.Fatalf("error = %v, want a *HostCollisionError", err)
	}
	want := HostCollisionError{Host: "dup.example.com", Kept: revision.Key{Namespace: "a", Name: "first"},
		Skipped: revision.Key{Namespace: "b", Name: "second"}}
	if *hc != want {
		t.Errorf("collision = %+v, want %+v", *hc, want)
	}
	for _, s := range []string{"a/first", "b/second", "dup.example.com"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q does not name %q", err, s)
		}
	}
	if _, ok := res.Skipped[want.Skipped]; !ok || len(res.Skipped) != 1 {
		t.Errorf("Skipped = %v, want only %s", res.Skipped, want.Skipped)
	}
	if len(res.Clusters) != 2 || res.Clusters[0].GetName() != "rev_a_first" {
		t.Errorf("clusters = %v, want rev_a_first and thaw_activator_dst", names(res))
	}
}

func TestTranslateClusterNamesDistinct(t *testing.T) {
	// Keys that a naive '.'→'_' mapping would merge get distinct clusters.
	snap := snapshotOf(
		rev("a", "b.c", revision.ModeProxy, []string{"one.example.com"}),
		rev("a", "b_c", revision.ModeProxy, []string{"two.example.com"}),
	)
	res, err := Translate(snap, testConfig())
	if err != nil {
		t.Fatal(err)
	}
	got := names(res)
	if len(got) != 3 || got[0] == got[1] {
		t.Fatalf("clusters = %v, want two distinct revision clusters and thaw_activator_dst", got)
	}
	for _, n := range got {
		if strings.Contains(n, ".") {
			t.Errorf("cluster name %q contains a dot", n)
		}
	}
}

func TestTranslateDeterministic(t *testing.T) {
	var revs []*revision.Revision
	for _, n := range []string{"e", "d", "c", "b", "a", "f", "g"} {
		revs = append(revs, rev("ns", n, revision.ModeServe, []string{n + ".example.com"}, ready("10.0.0.1", 80)))
	}
	first, err := Translate(snapshotOf(revs...), testConfig())
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		again, err := Translate(snapshotOf(revs...), testConfig())
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(first, again, protocmp.Transform()); diff != "" {
			t.Fatalf("run %d differs (-first +again):\n%s", i, diff)
		}
	}
}

func TestTranslateInvalidConfig(t *testing.T) {
	cfg := testConfig()
	cfg.HTTPPort = 0
	if _, err := Translate(snapshotOf(), cfg); !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("error = %v, want ErrInvalidConfig", err)
	}
}

// virtualHosts returns every virtual host of thaw_http: those over VHDS,
// then those inline (the 404 catch-all last).
func virtualHosts(r *Resources) []*routev3.VirtualHost {
	out := slices.Clone(r.VirtualHosts)
	for _, rc := range r.Routes {
		out = append(out, rc.GetVirtualHosts()...)
	}
	return out
}

func names(r *Resources) []string {
	var out []string
	for _, c := range r.Clusters {
		out = append(out, c.GetName())
	}
	return out
}

// goldenYAML renders resources as YAML: protojson (Envoy field names) for
// each message, normalised through encoding/json so protojson's randomised
// whitespace never reaches the file.
func goldenYAML(t *testing.T, r *Resources) []byte {
	t.Helper()
	doc := map[string]any{}
	add := func(key string, msgs ...proto.Message) {
		list := make([]json.RawMessage, 0, len(msgs))
		for _, m := range msgs {
			b, err := protojson.MarshalOptions{UseProtoNames: true}.Marshal(m)
			if err != nil {
				t.Fatalf("marshal %T: %v", m, err)
			}
			list = append(list, b)
		}
		doc[key] = list
	}
	add("listeners", toMessages(r.Listeners)...)
	add("routes", toMessages(r.Routes)...)
	add("clusters", toMessages(r.Clusters)...)
	add("endpoints", toMessages(r.Endpoints)...)
	add("virtual_hosts", toMessages(r.VirtualHosts)...)
	skipped := map[string]string{}
	for k, err := range r.Skipped {
		skipped[k.String()] = err.Error()
	}
	doc["skipped"] = skipped
	j, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	y, err := yaml.JSONToYAML(j)
	if err != nil {
		t.Fatal(err)
	}
	return y
}

func toMessages[M proto.Message](in []M) []proto.Message {
	out := make([]proto.Message, len(in))
	for i, m := range in {
		out[i] = m
	}
	return out
}

// checkGolden compares got with the golden file, or rewrites it with
// -update.
func checkGolden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read golden (run with -update to create): %v", err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("%s mismatch (-want +got; rerun with -update if intended):\n%s", path, diff)
	}
}
