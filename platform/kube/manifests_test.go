package kube

import (
	"os"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/thaw-dev/thaw/envoy"
	"github.com/thaw-dev/thaw/revision"
)

// buildManifests runs kustomize (krusty, what `kubectl apply -k` embeds)
// on a directory under manifests/ and returns the objects.
func buildManifests(t *testing.T, dir string) []*unstructured.Unstructured {
	t.Helper()
	k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
	rm, err := k.Run(filesys.MakeFsOnDisk(), "../../manifests/"+dir)
	if err != nil {
		t.Fatalf("kustomize build manifests/%s: %v", dir, err)
	}
	var out []*unstructured.Unstructured
	for _, r := range rm.Resources() {
		j, err := r.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(j); err != nil {
			t.Fatal(err)
		}
		out = append(out, u)
	}
	return out
}

func find(t *testing.T, objs []*unstructured.Unstructured, kind, name string, into runtime.Object) {
	t.Helper()
	for _, o := range objs {
		if o.GetKind() == kind && strings.HasPrefix(o.GetName(), name) {
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, into); err != nil {
				t.Fatalf("%s %s: %v", kind, name, err)
			}
			return
		}
	}
	t.Fatalf("no %s %s in the manifests", kind, name)
}

func TestManifestsBase(t *testing.T) {
	objs := buildManifests(t, "")
	var kinds []string
	for _, o := range objs {
		kinds = append(kinds, o.GetKind()+"/"+o.GetName())
		switch o.GetKind() {
		case "Namespace", "ClusterRole", "ClusterRoleBinding", "CustomResourceDefinition":
		default:
			if o.GetNamespace() != "thaw-system" {
				t.Errorf("%s/%s in namespace %q, want thaw-system", o.GetKind(), o.GetName(), o.GetNamespace())
			}
		}
	}
	for _, want := range []string{"Namespace/thaw-system", "ServiceAccount/thaw", "ClusterRole/thaw", "ClusterRoleBinding/thaw",
		"Role/thaw-leader-election", "RoleBinding/thaw-leader-election", "Deployment/thaw", "PodDisruptionBudget/thaw",
		"Service/thaw-grpc", "Deployment/envoy", "Service/envoy", "PodDisruptionBudget/envoy", "ServiceAccount/envoy",
		"CustomResourceDefinition/revisions.thaw.dev", "CustomResourceDefinition/revisionsplits.thaw.dev"} {
		if !slices.Contains(kinds, want) {
			t.Errorf("missing %s (have %v)", want, kinds)
		}
	}

	var cr rbacv1.ClusterRole
	find(t, objs, "ClusterRole", "thaw", &cr)
	want := map[string][]string{
		"apps/deployments":                     {"get", "list", "watch", "patch"},
		"apps/statefulsets":                    {"get", "list", "watch", "patch"},
		"apps/deployments/scale":               {"get", "update", "patch"},
		"apps/statefulsets/scale":              {"get", "update", "patch"},
		"apps/replicasets/scale":               {"get", "update", "patch"},
		"autoscaling/horizontalpodautoscalers": {"list", "watch"},
		"keda.sh/scaledobjects":                {"list", "watch"},
		"thaw.dev/revisions":                   {"get", "list", "watch"},
		"thaw.dev/revisions/status":            {"patch"},
		"thaw.dev/revisionsplits":              {"list", "watch"},
		"thaw.dev/revisionsplits/status":       {"patch"},
		"/pods":                                {"get", "list", "watch", "patch"},
		"/events":                              {"create", "patch"},
	}
	got := map[string][]string{}
	for _, r := range cr.Rules {
		if len(r.ResourceNames) > 0 || len(r.NonResourceURLs) > 0 {
			t.Errorf("unexpected rule %+v", r)
		}
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				got[g+"/"+res] = append(got[g+"/"+res], r.Verbs...)
			}
		}
	}
	for k, verbs := range got {
		slices.Sort(verbs)
		w := slices.Clone(want[k])
		slices.Sort(w)
		if !slices.Equal(verbs, w) {
			t.Errorf("ClusterRole %s verbs %v, want %v (least privilege)", k, verbs, w)
		}
	}
	if len(got) != len(want) {
		t.Errorf("ClusterRole covers %v, want exactly %v", got, want)
	}
	var role rbacv1.Role
	find(t, objs, "Role", "thaw-leader-election", &role)
	for _, r := range role.Rules {
		if !slices.Equal(r.Resources, []string{"leases"}) || slices.Contains(r.Verbs, "*") ||
			(!slices.Equal(r.Verbs, []string{"create"}) && !slices.Equal(r.ResourceNames, []string{DefaultLeaseName})) {
			t.Errorf("leader election rule %+v: want leases only, named %q except create", r, DefaultLeaseName)
		}
	}

	var thawImage appsv1.Deployment
	find(t, objs, "Deployment", "thaw", &thawImage)
	if img := thawImage.Spec.Template.Spec.Containers[0].Image; !strings.HasPrefix(img, "ghcr.io/thaw-dev/thaw:") {
		t.Errorf("thaw image %q, want ghcr.io/thaw-dev/thaw:<version> (README.md)", img)
	}
	var thaw appsv1.Deployment
	find(t, objs, "Deployment", "thaw", &thaw)
	if *thaw.Spec.Replicas != 2 {
		t.Errorf("thaw replicas %d, want 2", *thaw.Spec.Replicas)
	}
	c := thaw.Spec.Template.Spec.Containers[0]
	if c.LivenessProbe.HTTPGet.Path != "/healthz" || c.ReadinessProbe.HTTPGet.Path != "/readyz" {
		t.Errorf("thaw probes %+v %+v", c.LivenessProbe, c.ReadinessProbe)
	}
	for _, arg := range []string{"run", "--leader-elect=true", "--lease-name=" + DefaultLeaseName, "--identity=$(POD_NAME)"} {
		if !slices.Contains(c.Args, arg) {
			t.Errorf("thaw args %v lack %s", c.Args, arg)
		}
	}
	var fleet appsv1.Deployment
	find(t, objs, "Deployment", "envoy", &fleet)
	for _, d := range []*appsv1.Deployment{&thaw, &fleet} {
		checkRestricted(t, d.Name, &d.Spec.Template.Spec)
	}

	var cm corev1.ConfigMap
	find(t, objs, "ConfigMap", "envoy-bootstrap", &cm)
	if err := envoy.Validate([]byte(cm.Data["bootstrap.yaml"])); err != nil {
		t.Errorf("fleet bootstrap: %v", err)
	}
	if vol := fleet.Spec.Template.Spec.Volumes[0]; vol.ConfigMap == nil || vol.ConfigMap.Name != cm.Name {
		t.Errorf("fleet mounts %+v, want the generated ConfigMap %s", vol, cm.Name)
	}
	var svc corev1.Service
	find(t, objs, "Service", "thaw-grpc", &svc)
	if svc.Spec.ClusterIP != corev1.ClusterIPNone || !strings.Contains(cm.Data["bootstrap.yaml"], "thaw-grpc.thaw-system.svc") {
		t.Errorf("thaw-grpc must be headless and named by the bootstrap")
	}
}

// checkRestricted checks the "restricted" Pod Security Standard fields.
func checkRestricted(t *testing.T, name string, ps *corev1.PodSpec) {
	t.Helper()
	sc := ps.SecurityContext
	if sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot || sc.SeccompProfile == nil ||
		sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("%s: pod security context %+v", name, sc)
	}
	for _, c := range ps.Containers {
		cs := c.SecurityContext
		if cs == nil || cs.AllowPrivilegeEscalation == nil || *cs.AllowPrivilegeEscalation ||
			cs.ReadOnlyRootFilesystem == nil || !*cs.ReadOnlyRootFilesystem || cs.Capabilities == nil ||
			!slices.Equal(cs.Capabilities.Drop, []corev1.Capability{"ALL"}) {
			t.Errorf("%s/%s: container security context %+v", name, c.Name, cs)
		}
		if c.Resources.Requests == nil || c.Resources.Limits.Memory().IsZero() {
			t.Errorf("%s/%s: resources %+v", name, c.Name, c.Resources)
		}
	}
}

func TestManifestsEnvoyGatewayOverlay(t *testing.T) {
	objs := buildManifests(t, "overlays/envoy-gateway")
	var route, svc *unstructured.Unstructured
	for _, o := range objs {
		switch {
		case o.GetKind() == "HTTPRoute":
			route = o
		case o.GetKind() == "Service" && o.GetName() == "envoy":
			svc = o
		}
	}
	if route == nil || svc == nil || route.GetNamespace() != "thaw-system" {
		t.Fatalf("overlay lacks the HTTPRoute or the fleet Service (route %v)", route)
	}
	rules, _, _ := unstructured.NestedSlice(route.Object, "spec", "rules")
	refs, _, _ := unstructured.NestedSlice(rules[0].(map[string]any), "backendRefs")
	ref := refs[0].(map[string]any)
	ports, _, _ := unstructured.NestedSlice(svc.Object, "spec", "ports")
	if ref["name"] != "envoy" || ref["port"] != ports[0].(map[string]any)["port"] {
		t.Errorf("HTTPRoute backendRef %v does not match Service envoy ports %v", ref, ports)
	}
}

// TestSampleWorkload checks manifests/samples/hello.yaml is a valid
// revision.
func TestSampleWorkload(t *testing.T) {
	b, err := os.ReadFile("../../manifests/samples/hello.yaml")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for doc := range strings.SplitSeq(string(b), "\n---\n") {
		obj, _, err := scheme.Codecs.UniversalDeserializer().Decode([]byte(doc), nil, nil)
		if err != nil {
			t.Fatalf("decode: %v", err)
		}
		d, ok := obj.(*appsv1.Deployment)
		if !ok {
			continue
		}
		n++
		spec, err := parseSpec(revision.DefaultSpec(), revision.Limits{}, d.Annotations, &d.Spec.Template.Spec)
		if err != nil {
			t.Errorf("sample %s: %v", d.Name, err)
		}
		if spec.MinScale != 0 || len(spec.Hosts) != 2 || spec.Port != 8080 {
			t.Errorf("sample spec %+v", spec)
		}
		checkRestricted(t, d.Name, &d.Spec.Template.Spec)
		// Scale-down drain (docs/protocols.md): a preStop pause for the
		// endpoints to leave every Envoy, and a grace period covering it
		// plus a request as long as Knative's default timeout (300 s).
		ps := d.Spec.Template.Spec
		c := ps.Containers[0]
		if c.Lifecycle == nil || c.Lifecycle.PreStop == nil || c.Lifecycle.PreStop.Sleep == nil {
			t.Errorf("sample %s: no preStop sleep", d.Name)
		} else if g := ps.TerminationGracePeriodSeconds; g == nil || *g < 300+c.Lifecycle.PreStop.Sleep.Seconds {
			t.Errorf("sample %s: terminationGracePeriodSeconds %v, want >= 300 + preStop", d.Name, g)
		}
	}
	if n != 1 {
		t.Errorf("%d Deployments in the sample, want 1", n)
	}
}

// TestManifestsGiveEveryEnvoyItsOwnNodeID: thaw keys xDS ACKs and stats by
// Envoy node id, and the stats sink refuses a second stream with an id that
// already streams (over mTLS the fleet shares one certificate identity).
// Every Envoy workload in the manifests must take its node id from its own
// pod name, not from the shared bootstrap.
func TestManifestsGiveEveryEnvoyItsOwnNodeID(t *testing.T) {
	for _, dir := range []string{"", "overlays/cert-manager", "overlays/envoy-gateway", "overlays/activator-extproc"} {
		envoys := 0
		for _, o := range buildManifests(t, dir) {
			var ps *corev1.PodSpec
			switch o.GetKind() {
			case "Deployment", "StatefulSet", "DaemonSet":
				var d appsv1.Deployment // the pod template sits at the same path in all three
				if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &d); err != nil {
					t.Fatalf("%s %s/%s: %v", dir, o.GetKind(), o.GetName(), err)
				}
				ps = &d.Spec.Template.Spec
			default:
				continue
			}
			for _, c := range ps.Containers {
				if !slices.Contains(c.Command, "envoy") && c.Image != "envoy" {
					continue
				}
				envoys++
				if !nodeIDFromPodName(c) {
					t.Errorf("manifests/%s %s %s: container %s does not set --service-node from its pod name (args %v)",
						dir, o.GetKind(), o.GetName(), c.Name, c.Args)
				}
			}
		}
		if envoys == 0 {
			t.Errorf("manifests/%s: no Envoy container found", dir)
		}
	}
}

// nodeIDFromPodName reports whether c's args set --service-node=$(VAR)
// with VAR from the pod's metadata.name.
func nodeIDFromPodName(c corev1.Container) bool {
	for _, a := range c.Args {
		v, ok := strings.CutPrefix(a, "--service-node=$(")
		if !ok {
			continue
		}
		name := strings.TrimSuffix(v, ")")
		for _, e := range c.Env {
			if e.Name == name && e.ValueFrom != nil && e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.name" {
				return true
			}
		}
	}
	return false
}
