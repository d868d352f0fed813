package local

import (
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/thaw-dev/thaw/revision"
)

func TestLoadValid(t *testing.T) {
	cfg, err := Load("testdata/valid.yaml", revision.DefaultSpec())
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if err := cfg.Err(); err != nil {
		t.Fatalf("unexpected invalid revisions: %v", err)
	}
	if len(cfg.Revisions) != 2 {
		t.Fatalf("got %d revisions, want 2", len(cfg.Revisions))
	}
	dir, err := filepath.Abs("testdata")
	if err != nil {
		t.Fatal(err)
	}
	hello := cfg.Revisions[0]
	wantSpec := revision.DefaultSpec()
	wantSpec.Hosts = []string{"hello.localhost"}
	wantSpec.Target = 10
	wantSpec.ContainerConcurrency = 20
	wantSpec.StableWindow = 6 * time.Second
	wantSpec.QueueDepth = 1000000
	wantSpec.ScaleToZeroGracePeriod = 5 * time.Second
	want := RevisionConfig{
		Key:         revision.Key{Namespace: "local", Name: "hello"},
		Spec:        wantSpec,
		Command:     []string{filepath.Join(dir, "../bin/workload"), "--port", "{port}"},
		Dir:         filepath.Dir(dir),
		Env:         map[string]string{"BODY": "hello", "COUNT": "3"},
		Readiness:   Probe{HTTPPath: "/healthz", Period: 200 * time.Millisecond, Timeout: 2 * time.Second, FailureThreshold: 5},
		StopTimeout: 3 * time.Second,
	}
	if diff := cmp.Diff(want, hello); diff != "" {
		t.Errorf("hello (-want +got):\n%s", diff)
	}
	tcp := cfg.Revisions[1]
	if tcp.Key != (revision.Key{Namespace: "team", Name: "tcp"}) {
		t.Errorf("key = %v, want team/tcp", tcp.Key)
	}
	wantProbe := Probe{Period: DefaultProbePeriod, Timeout: DefaultProbeTimeout, FailureThreshold: DefaultProbeFailureThreshold}
	if tcp.Readiness != wantProbe {
		t.Errorf("default probe = %+v, want %+v", tcp.Readiness, wantProbe)
	}
	if tcp.Dir != dir || tcp.StopTimeout != DefaultStopTimeout || tcp.Command[0] != "sleep" {
		t.Errorf("defaults: dir %q stop %v command %q", tcp.Dir, tcp.StopTimeout, tcp.Command)
	}
}

func TestLoadOneInvalidOfTwo(t *testing.T) {
	cfg, err := Load("testdata/invalid.yaml", revision.DefaultSpec())
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if len(cfg.Revisions) != 1 || cfg.Revisions[0].Key.Name != "good" {
		t.Fatalf("valid revisions = %v, want only good", keys(cfg.Revisions))
	}
	bad := revision.Key{Namespace: "local", Name: "bad"}
	err = cfg.Invalid[bad]
	if err == nil {
		t.Fatalf("Invalid = %v, want local/bad", cfg.Invalid)
	}
	if len(cfg.Invalid) != 1 || len(cfg.Errors) != 1 {
		t.Errorf("Invalid %d entries, Errors %d, want 1 and 1", len(cfg.Invalid), len(cfg.Errors))
	}
	msg := err.Error()
	for _, part := range []string{"testdata/invalid.yaml", "revision local/bad", "readiness.period", "autoscaling.target", "autoscaling.min-scale"} {
		if !strings.Contains(msg, part) {
			t.Errorf("error %q does not name %q", msg, part)
		}
	}
	if !errors.Is(err, revision.ErrInvalidSpec) {
		t.Errorf("errors.Is(%v, ErrInvalidSpec) = false", err)
	}
	if got, want := fields(err), []string{"autoscaling.min-scale", "autoscaling.target", "readiness.period"}; !slices.Equal(got, want) {
		t.Errorf("fields = %q, want %q", got, want)
	}
}

func TestParseInvalidFields(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name     string
		entry    string
		revision string // label in the error
		fields   []string
	}{
		{"no name", `{hosts: [a.localhost], command: [x]}`, "#1", []string{"name"}},
		{"bad name", `{name: Bad_Name, hosts: [a.localhost], command: [x]}`, "local/Bad_Name", []string{"name"}},
		{"no hosts", `{name: a, command: [x]}`, "local/a", []string{"hosts"}},
		{"bad host", `{name: a, hosts: ["a b"], command: [x]}`, "local/a", []string{"hosts"}},
		{"no command", `{name: a, hosts: [a.localhost]}`, "local/a", []string{"command"}},
		{"unknown field", `{name: a, hosts: [a.localhost], comand: [x]}`, "local/a", []string{"comand"}},
		{"wrong type", `{name: a, hosts: a.localhost, command: [x]}`, "local/a", []string{"hosts"}},
		{"missing dir", `{name: a, hosts: [a.localhost], command: [x], workingDir: nope}`, "local/a", []string{"workingDir"}},
		{"port in env", `{name: a, hosts: [a.localhost], command: [x], env: {PORT: 80}}`, "local/a", []string{"env.PORT"}},
		{"env list", `{name: a, hosts: [a.localhost], command: [x], env: {X: [1]}}`, "local/a", []string{"env.X"}},
		{"probe both", `{name: a, hosts: [a.localhost], command: [x], readiness: {path: /h, tcp: true}}`, "local/a", []string{"readiness"}},
		{"probe path", `{name: a, hosts: [a.localhost], command: [x], readiness: {path: h}}`, "local/a", []string{"readiness.path"}},
		{"probe threshold", `{name: a, hosts: [a.localhost], command: [x], readiness: {failureThreshold: 0}}`, "local/a", []string{"readiness.failureThreshold"}},
		{"stop timeout", `{name: a, hosts: [a.localhost], command: [x], stopTimeout: -1s}`, "local/a", []string{"stopTimeout"}},
		{"unknown setting", `{name: a, hosts: [a.localhost], command: [x], autoscaling: {targit: 1}}`, "local/a", []string{"autoscaling.targit"}},
		{"setting range", `{name: a, hosts: [a.localhost], command: [x], autoscaling: {target-utilization-percentage: 101}}`, "local/a", []string{"autoscaling.target-utilization-percentage"}},
		{"setting map", `{name: a, hosts: [a.localhost], command: [x], autoscaling: {target: {x: 1}}}`, "local/a", []string{"autoscaling.target"}},
		{"traffic percent range", `{name: a, hosts: [a.localhost], command: [x], traffic: {percent: 101}}`, "local/a", []string{"traffic.percent"}},
		{"traffic percent fraction", `{name: a, hosts: [a.localhost], command: [x], traffic: {percent: 10.5}}`, "local/a", []string{"traffic.percent"}},
		{"traffic percent text", `{name: a, hosts: [a.localhost], command: [x], traffic: {percent: ten}}`, "local/a", []string{"traffic.percent"}},
		{"traffic unknown key", `{name: a, hosts: [a.localhost], command: [x], traffic: {percnt: 10}}`, "local/a", []string{"percnt"}},
		{"traffic tag", `{name: a, hosts: [a.localhost], command: [x], traffic: {tag: Bad_Tag}}`, "local/a", []string{"traffic.tag"}},
		{"traffic as percent in autoscaling", `{name: a, hosts: [a.localhost], command: [x], autoscaling: {traffic-percent: 10}}`, "local/a", []string{"autoscaling.traffic-percent"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := Parse("f.yaml", dir, []byte("revisions:\n- "+tt.entry+"\n"), revision.DefaultSpec())
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if len(cfg.Revisions) != 0 || len(cfg.Errors) != 1 {
				t.Fatalf("got %d valid, %d errors; want 0 and 1", len(cfg.Revisions), len(cfg.Errors))
			}
			err = cfg.Errors[0]
			var rerr *RevisionError
			if !errors.As(err, &rerr) || rerr.File != "f.yaml" || rerr.Revision != tt.revision {
				t.Fatalf("error %v: want a RevisionError for f.yaml, revision %s", err, tt.revision)
			}
			if !strings.HasPrefix(err.Error(), "f.yaml: revision "+tt.revision+": ") {
				t.Errorf("message %q does not start with file and revision", err)
			}
			if got := fields(err); !slices.Equal(got, tt.fields) {
				t.Errorf("fields = %q, want %q (%v)", got, tt.fields, err)
			}
			_, keyed := cfg.Invalid[revision.Key{Namespace: "local", Name: "a"}]
			if wantKeyed := tt.revision == "local/a"; keyed != wantKeyed {
				t.Errorf("in Invalid = %v, want %v", keyed, wantKeyed)
			}
		})
	}
}

func TestParseConflicts(t *testing.T) {
	doc := `revisions:
- {name: a, hosts: [a.localhost], command: [x]}
- {name: a, hosts: [b.localhost], command: [x]}
- {name: c, hosts: [a.localhost], command: [x]}
- {name: d, namespace: other, hosts: [d.localhost], command: [x]}
`
	cfg, err := Parse("f.yaml", t.TempDir(), []byte(doc), revision.DefaultSpec())
	if err != nil {
		t.Fatal(err)
	}
	if got, want := keys(cfg.Revisions), []string{"local/a", "other/d"}; !slices.Equal(got, want) {
		t.Errorf("valid = %q, want %q", got, want)
	}
	if len(cfg.Errors) != 2 {
		t.Fatalf("errors = %v, want 2", cfg.Errors)
	}
	if got := fields(cfg.Errors[0]); !slices.Equal(got, []string{"name"}) {
		t.Errorf("duplicate name: fields %q (%v)", got, cfg.Errors[0])
	}
	if got := fields(cfg.Errors[1]); !slices.Equal(got, []string{"hosts"}) {
		t.Errorf("duplicate host: fields %q (%v)", got, cfg.Errors[1])
	}
	// The duplicate must not mark the valid local/a invalid.
	if _, ok := cfg.Invalid[revision.Key{Namespace: "local", Name: "a"}]; ok {
		t.Errorf("Invalid has local/a: %v", cfg.Invalid)
	}
	if _, ok := cfg.Invalid[revision.Key{Namespace: "local", Name: "c"}]; !ok {
		t.Errorf("Invalid lacks local/c: %v", cfg.Invalid)
	}
}

// TestParseTrafficSplit: revisions with a traffic percent may share a host
// (the xds translation checks the split as a whole); two without one still
// conflict.
func TestParseTrafficSplit(t *testing.T) {
	doc := `revisions:
- {name: v1, hosts: [shop.localhost], command: [x], traffic: {percent: 90}}
- {name: v2, hosts: [shop.localhost], command: [x], traffic: {percent: "10", tag: canary}}
- {name: v3, hosts: [shop.localhost], command: [x]}
- {name: p, hosts: [plain.localhost], command: [x], traffic: {}}
- {name: q, hosts: [plain.localhost], command: [x]}
`
	cfg, err := Parse("f.yaml", t.TempDir(), []byte(doc), revision.DefaultSpec())
	if err != nil {
		t.Fatal(err)
	}
	if got, want := keys(cfg.Revisions), []string{"local/v1", "local/v2", "local/v3", "local/p"}; !slices.Equal(got, want) {
		t.Fatalf("valid = %q, want %q (errors %v)", got, want, cfg.Errors)
	}
	v1, v2, v3 := cfg.Revisions[0].Spec, cfg.Revisions[1].Spec, cfg.Revisions[2].Spec
	if v1.TrafficPercent == nil || *v1.TrafficPercent != 90 || v1.Tag != "" {
		t.Errorf("v1 traffic = %v %q, want 90 and no tag", v1.TrafficPercent, v1.Tag)
	}
	if v2.TrafficPercent == nil || *v2.TrafficPercent != 10 || v2.Tag != "canary" || v2.TagHost() != "canary-shop.localhost" {
		t.Errorf("v2 traffic = %v %q, want 10 and tag canary", v2.TrafficPercent, v2.Tag)
	}
	if v3.TrafficPercent != nil {
		t.Errorf("v3 percent = %v, want none", *v3.TrafficPercent)
	}
	if len(cfg.Errors) != 1 || !slices.Equal(fields(cfg.Errors[0]), []string{"hosts"}) {
		t.Fatalf("errors = %v, want one host conflict (local/q)", cfg.Errors)
	}
	if _, ok := cfg.Invalid[revision.Key{Namespace: "local", Name: "q"}]; !ok {
		t.Errorf("Invalid lacks local/q: %v", cfg.Invalid)
	}
}

func TestParseFileErrors(t *testing.T) {
	for name, doc := range map[string]string{
		"not yaml":      "revisions: [",
		"unknown top":   "revision: []",
		"revisions map": "revisions: {a: 1}",
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := Parse("f.yaml", t.TempDir(), []byte(doc), revision.DefaultSpec()); err == nil || !strings.HasPrefix(err.Error(), "f.yaml: ") {
				t.Errorf("Parse error = %v, want one starting with the file name", err)
			}
		})
	}
	if _, err := Load(filepath.Join(t.TempDir(), "missing.yaml"), revision.DefaultSpec()); err == nil {
		t.Error("Load of a missing file: want an error")
	}
}

func keys(rs []RevisionConfig) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.Key.String())
	}
	return out
}

// fields returns the sorted Field of every FieldError inside err.
func fields(err error) []string {
	var out []string
	var walk func(error)
	walk = func(e error) {
		if j, ok := e.(interface{ Unwrap() []error }); ok {
			for _, c := range j.Unwrap() {
				walk(c)
			}
			return
		}
		var fe *revision.FieldError
		if errors.As(e, &fe) {
			out = append(out, fe.Field)
		}
	}
	walk(err)
	slices.Sort(out)
	return slices.Compact(out)
}
