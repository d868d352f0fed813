package kube

import (
	"errors"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/thaw-dev/thaw/api/v1alpha1"
	"github.com/thaw-dev/thaw/revision"
)

func testRevision(mutate func(*v1alpha1.Revision)) *v1alpha1.Revision {
	r := &v1alpha1.Revision{
		ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "hello", Generation: 1},
		Spec: v1alpha1.RevisionSpec{
			ScaleTargetRef: v1alpha1.ScaleTargetRef{APIVersion: "apps/v1", Kind: "Deployment", Name: "hello"},
			Port:           8080,
			Hosts:          []string{"Hello.example.com"},
		},
	}
	if mutate != nil {
		mutate(r)
	}
	return r
}

// TestSpecFromRevisionMatchesAnnotations: a Revision and a workload
// annotated with the same settings give the same revision.Spec.
func TestSpecFromRevisionMatchesAnnotations(t *testing.T) {
	sec := func(d time.Duration) *metav1.Duration { return &metav1.Duration{Duration: d} }
	r := testRevision(func(r *v1alpha1.Revision) {
		r.Spec.Protocol = v1alpha1.ProtocolH2C
		r.Spec.Autoscaling = v1alpha1.Autoscaling{
			ContainerConcurrency: ptr.To[int32](10), Metric: "rps", Target: ptr.To(12.5),
			TargetUtilizationPercentage: ptr.To(80.0), MinScale: ptr.To[int32](1), MaxScale: ptr.To[int32](9),
			InitialScale: ptr.To[int32](2), ActivationScale: ptr.To[int32](3), Window: sec(90 * time.Second),
			PanicWindowPercentage: ptr.To(20.0), PanicThresholdPercentage: ptr.To(300.0), ScaleDownDelay: sec(time.Minute),
			MaxScaleUpRate: ptr.To(10.0), MaxScaleDownRate: ptr.To(4.0), TargetBurstCapacity: ptr.To(-1.0),
			ScaleToZeroGracePeriod: sec(45 * time.Second), ScaleToZeroPodRetentionPeriod: sec(10 * time.Second),
			ActivationTimeout: sec(2 * time.Minute), HoldTimeout: sec(20 * time.Second), QueueDepth: ptr.To[int32](50),
			RequestTimeout: sec(time.Hour), IdleTimeout: sec(5 * time.Minute),
		}
		r.Spec.Traffic = &v1alpha1.Traffic{Percent: ptr.To[int32](10), Tag: "canary"}
	})
	ann := map[string]string{
		AnnotationHosts: "Hello.example.com", AnnotationPort: "8080",
		"autoscaling.thaw.dev/protocol":                           "h2c",
		"autoscaling.thaw.dev/container-concurrency":              "10",
		"autoscaling.thaw.dev/metric":                             "rps",
		"autoscaling.thaw.dev/target":                             "12.5",
		"autoscaling.thaw.dev/target-utilization-percentage":      "80",
		"autoscaling.thaw.dev/min-scale":                          "1",
		"autoscaling.thaw.dev/max-scale":                          "9",
		"autoscaling.thaw.dev/initial-scale":                      "2",
		"autoscaling.thaw.dev/activation-scale":                   "3",
		"autoscaling.thaw.dev/window":                             "90s",
		"autoscaling.thaw.dev/panic-window-percentage":            "20",
		"autoscaling.thaw.dev/panic-threshold-percentage":         "300",
		"autoscaling.thaw.dev/scale-down-delay":                   "1m",
		"autoscaling.thaw.dev/max-scale-up-rate":                  "10",
		"autoscaling.thaw.dev/max-scale-down-rate":                "4",
		"autoscaling.thaw.dev/target-burst-capacity":              "-1",
		"autoscaling.thaw.dev/scale-to-zero-grace-period":         "45s",
		"autoscaling.thaw.dev/scale-to-zero-pod-retention-period": "10s",
		"autoscaling.thaw.dev/activation-timeout":                 "2m",
		"autoscaling.thaw.dev/hold-timeout":                       "20s",
		"autoscaling.thaw.dev/queue-depth":                        "50",
		"autoscaling.thaw.dev/request-timeout":                    "1h",
		"autoscaling.thaw.dev/idle-timeout":                       "5m",
		revision.AnnotationTrafficPercent:                         "10",
		revision.AnnotationTag:                                    "canary",
	}
	for name, lim := range map[string]revision.Limits{"no limits": {}, "hold budget 30s": {HoldBudget: 30 * time.Second}} {
		t.Run(name, func(t *testing.T) {
			want, err := parseSpec(revision.DefaultSpec(), lim, ann, nil)
			if err != nil {
				t.Fatalf("annotations: %v", err)
			}
			got, err := specFromRevision(revision.DefaultSpec(), lim, r)
			if err != nil {
				t.Fatalf("Revision: %v", err)
			}
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("Revision spec differs from the annotation spec (-annotations +revision):\n%s", d)
			}
			if got.Hosts[0] != "hello.example.com" || got.Protocol != revision.ProtocolH2C || got.Target != 12.5 ||
				got.TrafficPercent == nil || *got.TrafficPercent != 10 || got.TagHost() != "canary-hello.example.com" {
				t.Errorf("spec %+v", got)
			}
		})
	}
}

func TestSpecFromRevisionDefaultsAndErrors(t *testing.T) {
	defaults := revision.DefaultSpec()
	defaults.Target = 7 // a global default from flags
	tests := []struct {
		name   string
		mutate func(*v1alpha1.Revision)
		lim    revision.Limits
		check  func(t *testing.T, s revision.Spec)
		// fields are the Revision fields the error names, in order.
		fields []string
	}{
		{
			name: "nothing set: global defaults, the Revision's hosts and port",
			check: func(t *testing.T, s revision.Spec) {
				want := defaults
				want.Hosts, want.Port = []string{"hello.example.com"}, 8080
				if d := cmp.Diff(want, s); d != "" {
					t.Errorf("(-want +got):\n%s", d)
				}
			},
		},
		{
			name:   "port 0 means the pods' first container port",
			mutate: func(r *v1alpha1.Revision) { r.Spec.Port = 0 },
			check: func(t *testing.T, s revision.Spec) {
				if s.Port != 0 {
					t.Errorf("port %d", s.Port)
				}
			},
		},
		{
			// An Envoy Gateway backend: EG routes to it, thaw's own Envoy
			// gets its cluster and endpoints only.
			name:   "no hosts is valid",
			mutate: func(r *v1alpha1.Revision) { r.Spec.Hosts = nil },
			check: func(t *testing.T, s revision.Spec) {
				if len(s.Hosts) != 0 {
					t.Errorf("hosts %v, want none", s.Hosts)
				}
			},
		},
		{
			name: "values the schema would refuse are refused again, named as Revision fields",
			mutate: func(r *v1alpha1.Revision) {
				r.Spec.Protocol = "h3"
				r.Spec.Autoscaling.Target = ptr.To(0.001)
				r.Spec.Autoscaling.MinScale = ptr.To[int32](5)
				r.Spec.Autoscaling.MaxScale = ptr.To[int32](2)
				r.Spec.Autoscaling.Window = &metav1.Duration{Duration: time.Second}
			},
			fields: []string{"spec.autoscaling.target", "spec.autoscaling.window", "spec.protocol", "spec.autoscaling.minScale"},
		},
		{
			name:   "hold timeout above the hold budget",
			mutate: func(r *v1alpha1.Revision) { r.Spec.Autoscaling.HoldTimeout = &metav1.Duration{Duration: time.Minute} },
			lim:    revision.Limits{HoldBudget: 30 * time.Second},
			fields: []string{"spec.autoscaling.holdTimeout"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := specFromRevision(defaults, tt.lim, testRevision(tt.mutate))
			if len(tt.fields) == 0 {
				if err != nil {
					t.Fatalf("error %v", err)
				}
				tt.check(t, s)
				return
			}
			if !errors.Is(err, revision.ErrInvalidSpec) {
				t.Fatalf("error %v, want ErrInvalidSpec", err)
			}
			got := fieldsOf(err)
			slices.Sort(got)
			want := slices.Clone(tt.fields)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Errorf("error names %v, want %v (%v)", got, want, err)
			}
		})
	}
}

func TestTargetOf(t *testing.T) {
	r := testRevision(func(r *v1alpha1.Revision) {
		r.Spec.ScaleTargetRef = v1alpha1.ScaleTargetRef{APIVersion: "argoproj.io/v1alpha1", Kind: "Rollout", Name: "web"}
	})
	if got, want := targetOf(r), (targetKey{namespace: "apps", group: "argoproj.io", kind: "Rollout", name: "web"}); got != want {
		t.Errorf("targetOf = %+v, want %+v", got, want)
	}
	r.Spec.ScaleTargetRef.APIVersion = "v1"
	if got := targetOf(r); got.group != "" || got.String() != "Rollout apps/web" {
		t.Errorf("core group target %+v %q", got, got.String())
	}
}

// TestSampleRevision: manifests/samples/hello-revision.yaml holds a
// Revision that decodes strictly and translates to a valid spec.
func TestSampleRevision(t *testing.T) {
	b, err := os.ReadFile("../../manifests/samples/hello-revision.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var found int
	for doc := range strings.SplitSeq(string(b), "\n---\n") {
		if !strings.Contains(doc, "kind: Revision") {
			continue
		}
		found++
		var r v1alpha1.Revision
		if err := yaml.UnmarshalStrict([]byte(doc), &r); err != nil {
			t.Fatalf("sample Revision: %v", err)
		}
		s, err := specFromRevision(revision.DefaultSpec(), revision.Limits{}, &r)
		if err != nil {
			t.Fatalf("sample Revision invalid: %v", err)
		}
		if s.MinScale != 0 || s.Target != 10 || r.Spec.ScaleTargetRef.Kind != "Deployment" {
			t.Errorf("sample spec %+v", s)
		}
	}
	if found != 1 {
		t.Fatalf("%d Revisions in the sample, want 1", found)
	}
}

// TestRevisionTransform: the informer cache holds typed Revisions; an
// object that does not decode keeps its identity and the decode error, so
// it is reported as invalid instead of dropped.
func TestRevisionTransform(t *testing.T) {
	obj := func(port any) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "thaw.dev/v1alpha1", "kind": "Revision",
			"metadata": map[string]any{"namespace": "apps", "name": "hello", "generation": int64(2),
				"managedFields": []any{map[string]any{"manager": "kubectl"}}},
			"spec": map[string]any{"scaleTargetRef": map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "name": "hello"}, "port": port},
		}}
	}
	got, err := revisionTransform(obj(int64(8080)))
	if err != nil {
		t.Fatal(err)
	}
	r, ok := got.(*v1alpha1.Revision)
	if !ok || r.Spec.Port != 8080 || r.Generation != 2 || r.ManagedFields != nil || r.Annotations[annotationDecodeError] != "" {
		t.Errorf("transformed %#v", got)
	}
	got, err = revisionTransform(obj("http"))
	if err != nil {
		t.Fatal(err)
	}
	r, ok = got.(*v1alpha1.Revision)
	if !ok || r.Name != "hello" || r.Generation != 2 || r.Annotations[annotationDecodeError] == "" {
		t.Errorf("undecodable object transformed to %#v", got)
	}
	if again, _ := revisionTransform(r); again != any(r) {
		t.Error("transforming a typed Revision changed it")
	}
}
