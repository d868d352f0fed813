package local

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/thaw-dev/thaw/revision"
)

// TestParseRefusesBadSettings: every refused entry names the revision, the
// field as written in the file and, where it has one, the allowed range.
func TestParseRefusesBadSettings(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name, settings string
		field, want    string
	}{
		{"max-scale wrap", `max-scale: 4294967297`, "autoscaling.max-scale", `"4294967297" not allowed: want an integer 0..2147483647`},
		{"max-scale zero wrap", `max-scale: 4294967296`, "autoscaling.max-scale", `"4294967296" not allowed`},
		{"min-scale wrap", `min-scale: 4294967301`, "autoscaling.min-scale", `"4294967301" not allowed`},
		{"int32 overflow quoted as written", `max-scale: 2147483648`, "autoscaling.max-scale", `"2147483648" not allowed`},
		{"inf target", `target: Inf`, "autoscaling.target", `"Inf" not allowed: want a finite number`},
		{"nan rate", `max-scale-up-rate: NaN`, "autoscaling.max-scale-up-rate", `"NaN" not allowed: want a finite number`},
		{"inf duration", `window: +Infinity`, "autoscaling.window", `"+Infinity" not allowed`},
		{"huge duration", `scale-down-delay: 1e300`, "autoscaling.scale-down-delay", `not allowed: want a duration`},
		{"knative typo", `autoscaling.knative.dev/tagret: 10`, "autoscaling.autoscaling.knative.dev/tagret", `want a setting name`},
		{"other prefix", `example.com/target: 10`, "autoscaling.example.com/target", `want a setting name`},
		{"knative class", `autoscaling.knative.dev/class: kpa`, "autoscaling.autoscaling.knative.dev/class", `want a setting name`},
		{"hold above budget", `hold-timeout: 45s`, "autoscaling.hold-timeout", `"45s" not allowed: want 1s..30s (at most the hold budget, --hold-budget 30s)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc := "revisions:\n- name: a\n  hosts: [a.localhost]\n  command: [x]\n  autoscaling:\n    " + tt.settings + "\n"
			cfg, err := ParseWithin("f.yaml", dir, []byte(doc), revision.DefaultSpec(), revision.Limits{HoldBudget: 30 * time.Second})
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if len(cfg.Revisions) != 0 || len(cfg.Errors) != 1 {
				t.Fatalf("got %d valid, errors %v; want 0 valid and 1 error", len(cfg.Revisions), cfg.Errors)
			}
			err = cfg.Invalid[revision.Key{Namespace: "local", Name: "a"}]
			if got := fields(err); !slices.Equal(got, []string{tt.field}) {
				t.Errorf("fields = %q, want %q (%v)", got, tt.field, err)
			}
			if !strings.Contains(err.Error(), tt.want) || !strings.HasPrefix(err.Error(), "f.yaml: revision local/a: ") {
				t.Errorf("error %q, want it to contain %q", err, tt.want)
			}
		})
	}
}

func TestParseAcceptsPrefixedSettings(t *testing.T) {
	doc := `revisions:
- name: a
  hosts: [A.localhost., "b.localhost:8080"]
  command: [x]
  autoscaling:
    autoscaling.knative.dev/maxScale: 5
    autoscaling.thaw.dev/target: 10
    hold-timeout: 20s
`
	cfg, err := ParseWithin("f.yaml", t.TempDir(), []byte(doc), revision.DefaultSpec(), revision.Limits{HoldBudget: 30 * time.Second})
	if err != nil || len(cfg.Revisions) != 1 {
		t.Fatalf("Parse: %v, errors %v", err, cfg.Errors)
	}
	s := cfg.Revisions[0].Spec
	if s.MaxScale != 5 || s.Target != 10 || s.HoldTimeout != 20*time.Second ||
		!slices.Equal(s.Hosts, []string{"a.localhost", "b.localhost"}) {
		t.Errorf("spec = max %d target %v hold %v hosts %q", s.MaxScale, s.Target, s.HoldTimeout, s.Hosts)
	}
}

// TestParseYAMLInfinity: YAML's own .inf and .nan (which JSON cannot
// hold) make only their revision invalid, with the revision, the field and
// the value as written named; the other revisions of the file load.
func TestParseYAMLInfinity(t *testing.T) {
	for _, tt := range []struct{ field, value string }{
		{"target-burst-capacity", ".inf"}, {"target", "-.Inf"}, {"max-scale-up-rate", ".NaN"}, {"target", "+.inf"},
	} {
		t.Run(tt.field+"="+tt.value, func(t *testing.T) {
			doc := "revisions:\n- name: a\n  hosts: [a.localhost]\n  command: [x]\n  autoscaling:\n    " + tt.field + ": " + tt.value +
				"\n- name: b\n  hosts: [b.localhost]\n  command: [x]\n  autoscaling:\n    target: 1.5\n"
			cfg, err := Parse("f.yaml", t.TempDir(), []byte(doc), revision.DefaultSpec())
			if err != nil {
				t.Fatalf("Parse: %v, want only revision a invalid", err)
			}
			if len(cfg.Revisions) != 1 || cfg.Revisions[0].Key.Name != "b" || cfg.Revisions[0].Spec.Target != 1.5 {
				t.Fatalf("valid revisions = %+v, want b alone with target 1.5", cfg.Revisions)
			}
			err = cfg.Invalid[revision.Key{Namespace: "local", Name: "a"}]
			if got := fields(err); !slices.Equal(got, []string{"autoscaling." + tt.field}) {
				t.Errorf("fields = %q, want autoscaling.%s (%v)", got, tt.field, err)
			}
			if err == nil || !strings.HasPrefix(err.Error(), "f.yaml: revision local/a: ") || !strings.Contains(err.Error(), `"`+tt.value+`"`) {
				t.Errorf("error %v, want revision local/a and the value %q named", err, tt.value)
			}
		})
	}
}

// TestParseDuplicateYAMLKeys: a key written twice fails the file with the
// key and its line, wherever it is.
func TestParseDuplicateYAMLKeys(t *testing.T) {
	for name, doc := range map[string]string{
		"setting": "revisions:\n- name: a\n  hosts: [a.localhost]\n  command: [x]\n  autoscaling:\n    target: 10\n    target: 20\n",
		"field":   "revisions:\n- name: a\n  hosts: [a.localhost]\n  command: [x]\n  name: b\n",
		"top":     "revisions: []\nrevisions: []\n",
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Parse("f.yaml", t.TempDir(), []byte(doc), revision.DefaultSpec())
			if err == nil || !strings.HasPrefix(err.Error(), "f.yaml: ") || !strings.Contains(err.Error(), "already set") {
				t.Fatalf("Parse error = %v, want the duplicate key named", err)
			}
		})
	}
}

// TestParseHostsCollideInNormalForm: hosts equal after normalisation are
// one host; the later revision is invalid and the earlier keeps it.
func TestParseHostsCollideInNormalForm(t *testing.T) {
	doc := `revisions:
- {name: a, hosts: [dup.localhost], command: [x]}
- {name: b, hosts: [DUP.localhost], command: [x]}
- {name: c, hosts: ["dup.localhost.:8080"], command: [x]}
- {name: d, hosts: [d.localhost], command: [x]}
`
	cfg, err := Parse("f.yaml", t.TempDir(), []byte(doc), revision.DefaultSpec())
	if err != nil {
		t.Fatal(err)
	}
	if got := keys(cfg.Revisions); !slices.Equal(got, []string{"local/a", "local/d"}) {
		t.Errorf("valid = %q", got)
	}
	for _, name := range []string{"b", "c"} {
		err := cfg.Invalid[revision.Key{Namespace: "local", Name: name}]
		if err == nil || !errors.Is(err, revision.ErrInvalidSpec) || !strings.Contains(err.Error(), "local/a has it") {
			t.Errorf("local/%s: %v, want a host collision naming local/a", name, err)
		}
	}
}
