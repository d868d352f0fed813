package kube

import (
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// TestManifestsEnvoyGatewayModule: manifests/overlays/envoy-gateway-module
// runs thaw with --eg-extension and --activator=module, gives EG's Envoy
// pods the module (init container from thaw's image, emptyDir mounted
// read-only where thaw run's --activator-module points) beside thaw's
// certificates, the bootstrap with the module bridge, EG's translation
// hook with listeners, and opens thaw's gRPC and module ports to EG's
// Envoys.
func TestManifestsEnvoyGatewayModule(t *testing.T) {
	objs := buildManifests(t, "overlays/envoy-gateway-module")
	var thaw appsv1.Deployment
	find(t, objs, "Deployment", "thaw", &thaw)
	c := thaw.Spec.Template.Spec.Containers[0]
	for _, arg := range []string{"--eg-extension", "--activator=module", "--module-address=$(POD_IP):18001"} {
		if !slices.Contains(c.Args, arg) {
			t.Errorf("thaw args %v lack %s", c.Args, arg)
		}
	}
	var ep *unstructured.Unstructured
	var egConfig corev1.ConfigMap
	for _, o := range objs {
		if o.GetKind() == "EnvoyProxy" && o.GetName() == "thaw" {
			ep = o
		}
	}
	if ep == nil || ep.GetNamespace() != "envoy-gateway-system" {
		t.Fatalf("EnvoyProxy thaw in envoy-gateway-system missing: %v", ep)
	}
	find(t, objs, "ConfigMap", "envoy-gateway-config", &egConfig)
	if !strings.Contains(egConfig.Data["envoy-gateway.yaml"], "listener:\n          includeAll: true") {
		t.Error("EG's translation hook does not include listeners: the module's filter could not be added")
	}
	dep, _, _ := unstructured.NestedMap(ep.Object, "spec", "provider", "kubernetes", "envoyDeployment")
	var d struct {
		InitContainers []corev1.Container `json:"initContainers"`
		Container      struct {
			VolumeMounts []corev1.VolumeMount `json:"volumeMounts"`
		} `json:"container"`
		Pod struct {
			Volumes []corev1.Volume `json:"volumes"`
		} `json:"pod"`
	}
	if err := fromMap(dep, &d); err != nil {
		t.Fatal(err)
	}
	if len(d.InitContainers) != 1 || !slices.Equal(d.InitContainers[0].Args, []string{"install-module", "/thaw-module"}) ||
		d.InitContainers[0].Image != c.Image {
		t.Errorf("init containers %+v: want thaw install-module /thaw-module from thaw's image %s", d.InitContainers, c.Image)
	}
	mounts := map[string]string{}
	for _, m := range d.Container.VolumeMounts {
		mounts[m.Name] = m.MountPath
		if m.Name == "thaw-module" && !m.ReadOnly {
			t.Error("the module's volume is mounted writable in EG's Envoy")
		}
	}
	if mounts["thaw-module"] != fleetModuleDir || mounts["thaw-tls"] == "" || mounts["thaw-sds"] == "" {
		t.Errorf("EG Envoy mounts %v: want thaw-module at %s beside thaw-tls and thaw-sds", mounts, fleetModuleDir)
	}
	if !slices.ContainsFunc(d.Pod.Volumes, func(v corev1.Volume) bool { return v.Name == "thaw-module" && v.EmptyDir != nil }) {
		t.Errorf("pod volumes %v lack the module's emptyDir", d.Pod.Volumes)
	}
	value, _, _ := unstructured.NestedString(ep.Object, "spec", "bootstrap", "value")
	if !strings.Contains(value, "name: thaw_module") || !strings.Contains(value, "port_value: 18009") {
		t.Error("EG's bootstrap merge lacks the module bridge (listener thaw_module on 18009)")
	}
	var np networkingv1.NetworkPolicy
	find(t, objs, "NetworkPolicy", "thaw", &np)
	open := false
	for _, r := range np.Spec.Ingress {
		if len(r.Ports) == 2 && r.Ports[1].Port.String() == "module" && len(r.From) == 1 && r.From[0].NamespaceSelector != nil &&
			r.From[0].NamespaceSelector.MatchLabels["kubernetes.io/metadata.name"] == "envoy-gateway-system" {
			open = true
		}
	}
	if !open {
		t.Errorf("NetworkPolicy does not open the module port to EG's Envoys: %+v", np.Spec.Ingress)
	}
}

// fromMap converts an unstructured map into out (through JSON).
func fromMap(m map[string]any, out any) error {
	return runtime.DefaultUnstructuredConverter.FromUnstructured(m, out)
}
