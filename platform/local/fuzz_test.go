package local

import (
	"errors"
	"testing"
	"time"

	"github.com/thaw-dev/thaw/revision"
)

// FuzzParse feeds arbitrary files to the local YAML loader. Whatever the
// bytes it must not panic; when it accepts the file, every valid revision
// has a unique key, validates (hosts in normal form, no host shared with
// another valid revision) and is absent from Invalid, and every rejected
// entry is a *RevisionError. `go test` runs only the seeds.
func FuzzParse(f *testing.F) {
	for _, doc := range []string{
		"revisions:\n- name: a\n  hosts: [a.localhost]\n  command: [x]\n  autoscaling:\n    max-scale: 4294967297\n",
		"revisions:\n- {name: a, hosts: [dup.localhost], command: [x]}\n- {name: b, hosts: [DUP.localhost.], command: [x]}\n",
		"revisions:\n- name: a\n  hosts: [a.localhost]\n  command: [x]\n  autoscaling:\n    target: 1\n    target: 2\n",
		"revisions:\n- name: a\n  hosts: [a.localhost]\n  command: [x]\n  autoscaling: {autoscaling.knative.dev/tagret: 1, target: Inf}\n",
		"revisions:\n- name: a\n  hosts: [a.localhost]\n  command: [x]\n  readiness: {path: /h, period: 1e300, failureThreshold: 99999999999999999999}\n  stopTimeout: .nan\n",
		"revisions:\n- name: a\n  hosts: [a.localhost]\n  command: [x]\n  autoscaling: {hold-timeout: 2m}\n",
		"revisions:\n- name: a\n  hosts: [a.localhost]\n  command: [x]\n  autoscaling: {target-burst-capacity: .inf, target: -.Inf}\n  env: {A: .NaN}\n",
		"revisions: [{name: a, env: {PORT: 1}, hosts: [\"a:1\"], command: [x]}, 7, null]\n",
		"revisions: {a: 1}", "[", "",
	} {
		f.Add(doc)
	}
	dir := f.TempDir()
	lim := revision.Limits{HoldBudget: time.Minute}
	f.Fuzz(func(t *testing.T, doc string) {
		cfg, err := ParseWithin("f.yaml", dir, []byte(doc), revision.DefaultSpec(), lim)
		if err != nil {
			return
		}
		keys := map[revision.Key]bool{}
		owner := map[string]revision.Key{}
		for _, rc := range cfg.Revisions {
			if keys[rc.Key] {
				t.Fatalf("revision %s twice", rc.Key)
			}
			keys[rc.Key] = true
			if _, bad := cfg.Invalid[rc.Key]; bad {
				t.Fatalf("revision %s both valid and invalid", rc.Key)
			}
			if err := rc.Spec.ValidateWithin(lim); err != nil {
				t.Fatalf("valid revision %s does not validate: %v", rc.Key, err)
			}
			for _, h := range rc.Spec.Hosts {
				if revision.NormalizeHost(h) != h {
					t.Fatalf("host %q of %s not in normal form", h, rc.Key)
				}
				if o, taken := owner[h]; taken {
					t.Fatalf("host %q claimed by %s and %s", h, o, rc.Key)
				}
				owner[h] = rc.Key
			}
		}
		for _, e := range cfg.Errors {
			var re *RevisionError
			if !errors.As(e, &re) || re.File != "f.yaml" {
				t.Fatalf("error %v is not a RevisionError of f.yaml", e)
			}
		}
	})
}
