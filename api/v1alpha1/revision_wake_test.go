package v1alpha1

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/thaw-dev/thaw/wake"
	"sigs.k8s.io/yaml"
)

// revisionWithWake is a Revision whose spec.wake sets every field of the
// wake policy, in the shape docs/configuration.md gives.
const revisionWithWake = `
apiVersion: thaw.dev/v1alpha1
kind: Revision
metadata: {name: shop, namespace: default}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: shop}
  wake:
    rules:
      - name: kube-probe
        userAgent: "kube-probe/.*"
        headers: {x-synthetic-check: "1"}
        response: {status: 200, headers: {content-type: text/plain}, body: "ok\n"}
    waitingPage: {status: 503, refresh: 3s, body: "<p>{{refresh}}</p>"}
    coldStartHeader: true
    schedule:
      - {name: office, start: "0 8 * * 1-5", duration: 10h, timeZone: Europe/Paris, minScale: 2}
`

// TestRevisionWakeIsWakeConfig: spec.wake decodes strictly into
// wake.Config (the one definition of the shape), compiles, and a
// Revision's DeepCopy copies the policy's slices and maps instead of
// sharing them with the informer's cached object.
func TestRevisionWakeIsWakeConfig(t *testing.T) {
	var r Revision
	if err := yaml.UnmarshalStrict([]byte(revisionWithWake), &r); err != nil {
		t.Fatal(err)
	}
	want := &wake.Config{
		Rules: []wake.RuleConfig{{Name: "kube-probe", UserAgent: "kube-probe/.*",
			Headers:  map[string]string{"x-synthetic-check": "1"},
			Response: &wake.ResponseConfig{Status: 200, Headers: map[string]string{"content-type": "text/plain"}, Body: "ok\n"}}},
		WaitingPage:     &wake.PageConfig{Status: 503, Refresh: "3s", Body: "<p>{{refresh}}</p>"},
		ColdStartHeader: true,
		Schedule:        []wake.WindowConfig{{Name: "office", Start: "0 8 * * 1-5", Duration: "10h", TimeZone: "Europe/Paris", MinScale: 2}},
	}
	if diff := cmp.Diff(want, r.Spec.Wake); diff != "" {
		t.Fatalf("spec.wake (-want +got):\n%s", diff)
	}
	if _, errs := wake.Compile(r.Spec.Wake); len(errs) > 0 {
		t.Fatalf("compile: %v", errs)
	}

	c := r.DeepCopy()
	w := c.Spec.Wake
	w.Rules[0].Name = "changed"
	w.Rules[0].Headers["x-synthetic-check"] = "2"
	w.Rules[0].Response.Headers["content-type"] = "text/html"
	w.Rules[0].Response.Status = 204
	w.WaitingPage.Refresh = "9s"
	w.Schedule[0].MinScale = 5
	if diff := cmp.Diff(want, r.Spec.Wake); diff != "" {
		t.Fatalf("DeepCopy shares state with the original (-want +got):\n%s", diff)
	}
}
