package kube

import (
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/thaw-dev/thaw/internal/certgen"
)

// TestManifestsMutualTLS checks the wiring of mutual TLS in manifests/:
// thaw serves TLS from the Secret certgen writes, the fleet mounts its
// client certificate where the bootstrap's SDS files point, and certgen
// runs with access to those Secrets only.
func TestManifestsMutualTLS(t *testing.T) {
	objs := buildManifests(t, "")
	var thaw, fleet appsv1.Deployment
	find(t, objs, "Deployment", "thaw", &thaw)
	find(t, objs, "Deployment", "envoy", &fleet)
	c := thaw.Spec.Template.Spec.Containers[0]
	mount := mountPath(t, &thaw.Spec.Template.Spec, certgen.DefaultServerSecret)
	for _, arg := range []string{"--tls-cert-file=" + mount + "/tls.crt", "--tls-key-file=" + mount + "/tls.key",
		"--tls-client-ca-file=" + mount + "/ca.crt"} {
		if !slices.Contains(c.Args, arg) {
			t.Errorf("thaw args %v lack %s", c.Args, arg)
		}
	}
	if slices.Contains(c.Args, "--pprof") || slices.Contains(c.Args, "--pprof=true") {
		t.Error("thaw serves pprof on the pod IP")
	}
	if got := mountPath(t, &fleet.Spec.Template.Spec, certgen.DefaultEnvoySecret); got != manifestTLS.CertDir {
		t.Errorf("fleet mounts %s at %s, the bootstrap reads %s", certgen.DefaultEnvoySecret, got, manifestTLS.CertDir)
	}
	var cm corev1.ConfigMap
	find(t, objs, "ConfigMap", "envoy-bootstrap", &cm)
	for _, f := range []string{"thaw-client-cert-sds.yaml", "thaw-trust-sds.yaml"} {
		if !strings.Contains(cm.Data[f], manifestTLS.CertDir) {
			t.Errorf("ConfigMap envoy-bootstrap lacks %s pointing at %s", f, manifestTLS.CertDir)
		}
	}

	var job batchv1.Job
	find(t, objs, "Job", "thaw-certgen", &job)
	var cron batchv1.CronJob
	find(t, objs, "CronJob", "thaw-certgen", &cron)
	for _, ps := range []*corev1.PodSpec{&job.Spec.Template.Spec, &cron.Spec.JobTemplate.Spec.Template.Spec} {
		checkRestricted(t, "thaw-certgen", ps)
		if ps.ServiceAccountName != "thaw-certgen" || ps.Containers[0].Args[0] != "certgen" {
			t.Errorf("certgen pod runs %v as %s", ps.Containers[0].Args, ps.ServiceAccountName)
		}
	}
	var role rbacv1.Role
	find(t, objs, "Role", "thaw-certgen", &role)
	names := []string{certgen.DefaultCASecret, certgen.DefaultServerSecret, certgen.DefaultEnvoySecret}
	for _, r := range role.Rules {
		named := slices.Equal(r.Verbs, []string{"get", "update"}) && slices.Equal(r.ResourceNames, names)
		if !slices.Equal(r.Resources, []string{"secrets"}) || !(named || slices.Equal(r.Verbs, []string{"create"})) {
			t.Errorf("certgen rule %+v: want secrets only, get/update by name, create", r)
		}
	}
}

// mountPath returns where ps mounts the Secret named secret.
func mountPath(t *testing.T, ps *corev1.PodSpec, secret string) string {
	t.Helper()
	for _, v := range ps.Volumes {
		if v.Secret == nil || v.Secret.SecretName != secret {
			continue
		}
		for _, m := range ps.Containers[0].VolumeMounts {
			if m.Name == v.Name {
				return m.MountPath
			}
		}
	}
	t.Fatalf("Secret %s not mounted", secret)
	return ""
}

// TestManifestsNetworkPolicy checks that thaw's gRPC port (and, with the
// activator module, its module port) admits the Envoy fleet only and its
// admin port the scraper only.
func TestManifestsNetworkPolicy(t *testing.T) {
	for _, tc := range []struct {
		dir    string
		module bool
	}{{"", true}, {"overlays/activator-extproc", false}} {
		t.Run("manifests/"+tc.dir, func(t *testing.T) { checkNetworkPolicy(t, tc.dir, tc.module) })
	}
}

func checkNetworkPolicy(t *testing.T, dir string, module bool) {
	objs := buildManifests(t, dir)
	var np networkingv1.NetworkPolicy
	find(t, objs, "NetworkPolicy", "thaw", &np)
	var thaw, fleet appsv1.Deployment
	find(t, objs, "Deployment", "thaw", &thaw)
	find(t, objs, "Deployment", "envoy", &fleet)
	for k, v := range np.Spec.PodSelector.MatchLabels {
		if thaw.Spec.Template.Labels[k] != v {
			t.Errorf("NetworkPolicy selects %v, thaw pods are %v", np.Spec.PodSelector.MatchLabels, thaw.Spec.Template.Labels)
		}
	}
	rules := 2
	if module {
		rules = 3 // + the module port, to the fleet only (TestManifestsActivatorModule)
	}
	if !slices.Equal(np.Spec.PolicyTypes, []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}) || len(np.Spec.Ingress) != rules {
		t.Fatalf("policy types %v, %d ingress rules; want Ingress with %d rules", np.Spec.PolicyTypes, len(np.Spec.Ingress), rules)
	}
	ports := map[string]networkingv1.NetworkPolicyIngressRule{}
	for _, r := range np.Spec.Ingress {
		if len(r.Ports) != 1 || len(r.From) == 0 {
			t.Fatalf("rule %+v: want one port and a source (an empty source admits everyone)", r)
		}
		ports[r.Ports[0].Port.String()] = r
	}
	grpc, admin := ports["grpc"], ports["admin"]
	if len(grpc.From) != 1 || grpc.From[0].NamespaceSelector != nil || grpc.From[0].PodSelector == nil {
		t.Fatalf("gRPC rule %+v: want the fleet's pods in thaw's namespace", grpc)
	}
	for k, v := range grpc.From[0].PodSelector.MatchLabels {
		if fleet.Spec.Template.Labels[k] != v {
			t.Errorf("gRPC rule selects %v, fleet pods are %v", grpc.From[0].PodSelector.MatchLabels, fleet.Spec.Template.Labels)
		}
	}
	if len(admin.From) != 1 || admin.From[0].NamespaceSelector == nil || admin.From[0].PodSelector == nil ||
		len(admin.From[0].NamespaceSelector.MatchLabels) == 0 {
		t.Errorf("admin rule %+v: want a namespace and pod selector for the scraper", admin)
	}
	portNames := map[string]bool{}
	for _, p := range thaw.Spec.Template.Spec.Containers[0].Ports {
		portNames[p.Name] = true
	}
	if !portNames["grpc"] || !portNames["admin"] {
		t.Errorf("thaw container ports %v lack grpc or admin", thaw.Spec.Template.Spec.Containers[0].Ports)
	}
}

// TestManifestsCertManagerOverlay checks the cert-manager component: the
// same Secret names, and no certgen left.
func TestManifestsCertManagerOverlay(t *testing.T) {
	objs := buildManifests(t, "overlays/cert-manager")
	secrets := map[string]bool{}
	for _, o := range objs {
		if strings.Contains(o.GetName(), "certgen") {
			t.Errorf("%s/%s still in the cert-manager overlay", o.GetKind(), o.GetName())
		}
		if o.GetKind() != "Certificate" {
			continue
		}
		name, _, _ := unstructured.NestedString(o.Object, "spec", "secretName")
		secrets[name] = true
		if o.GetNamespace() != "thaw-system" {
			t.Errorf("Certificate %s in %q", o.GetName(), o.GetNamespace())
		}
		if o.GetName() == certgen.DefaultServerSecret {
			dns, _, _ := unstructured.NestedStringSlice(o.Object, "spec", "dnsNames")
			if !slices.Contains(dns, manifestTLS.ServerName) {
				t.Errorf("server Certificate names %v, the fleet requires %s", dns, manifestTLS.ServerName)
			}
		}
	}
	for _, want := range []string{certgen.DefaultCASecret, certgen.DefaultServerSecret, certgen.DefaultEnvoySecret} {
		if !secrets[want] {
			t.Errorf("no Certificate writes Secret %s (have %v)", want, secrets)
		}
	}
}

// TestManifestsStrictFields decodes every built-in object of manifests/
// into its Go type, refusing unknown fields (a typo the apiserver would
// drop or refuse; the e2e dry-run checks the rest).
func TestManifestsStrictFields(t *testing.T) {
	for _, dir := range []string{"", "overlays/cert-manager", "overlays/activator-extproc"} {
		for _, o := range buildManifests(t, dir) {
			obj, err := scheme.Scheme.New(o.GroupVersionKind())
			if err != nil {
				continue // not a built-in kind (cert-manager, Gateway API)
			}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(o.Object, obj, true); err != nil {
				t.Errorf("manifests/%s: %s %s: %v", dir, o.GetKind(), o.GetName(), err)
			}
		}
	}
}
