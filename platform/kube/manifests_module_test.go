package kube

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/thaw-dev/thaw/envoy"
)

// fleetModuleDir is where the fleet's Envoy loads the module from: the
// default of thaw run's --activator-module (cmd/thaw).
const fleetModuleDir = "/etc/thaw-module"

// TestManifestsActivatorModule: manifests/ (the default install) and the
// overlays that build on it run thaw with --activator=module and its
// module port on the pod IP, open that port to the Envoy fleet only, copy
// the module from thaw's image into each Envoy pod where thaw run's
// default --activator-module points, and give Envoy the bootstrap with the
// module bridge to that port.
func TestManifestsActivatorModule(t *testing.T) {
	for _, dir := range []string{"", "overlays/cert-manager", "overlays/envoy-gateway"} {
		t.Run("manifests/"+dir, func(t *testing.T) { checkActivatorModule(t, buildManifests(t, dir)) })
	}
}

// TestManifestsActivatorExtProc: manifests/overlays/activator-extproc
// (manifests/base alone) keeps the ext_proc activator: thaw runs without
// --activator (thaw run's default extproc), no module port anywhere, and
// the Envoy pods get neither the module nor the bridge.
func TestManifestsActivatorExtProc(t *testing.T) {
	objs := buildManifests(t, "overlays/activator-extproc")
	var thaw, fleet appsv1.Deployment
	find(t, objs, "Deployment", "thaw", &thaw)
	find(t, objs, "Deployment", "envoy", &fleet)
	c := thaw.Spec.Template.Spec.Containers[0]
	for _, a := range c.Args {
		if strings.HasPrefix(a, "--activator") || strings.HasPrefix(a, "--module-") {
			t.Errorf("thaw arg %s on the ext_proc overlay", a)
		}
	}
	if slices.ContainsFunc(c.Ports, func(p corev1.ContainerPort) bool { return p.Name == "module" }) {
		t.Errorf("thaw ports %v open the module port", c.Ports)
	}
	var np networkingv1.NetworkPolicy
	find(t, objs, "NetworkPolicy", "thaw", &np)
	for _, r := range np.Spec.Ingress {
		for _, p := range r.Ports {
			if p.Port != nil && p.Port.String() == "module" {
				t.Errorf("NetworkPolicy opens the module port: %+v", r)
			}
		}
	}
	pod := fleet.Spec.Template.Spec
	if len(pod.InitContainers) != 0 || slices.ContainsFunc(pod.Volumes, func(v corev1.Volume) bool { return v.Name == "thaw-module" }) {
		t.Errorf("Envoy pod gets the module: init %v volumes %v", pod.InitContainers, pod.Volumes)
	}
	var cm corev1.ConfigMap
	find(t, objs, "ConfigMap", "envoy-bootstrap", &cm)
	if strings.Contains(cm.Data["bootstrap.yaml"], "thaw_module") {
		t.Error("the ext_proc overlay's bootstrap has the module bridge")
	}
}

func checkActivatorModule(t *testing.T, objs []*unstructured.Unstructured) {
	t.Helper()
	var thaw, fleet appsv1.Deployment
	find(t, objs, "Deployment", "thaw", &thaw)
	find(t, objs, "Deployment", "envoy", &fleet)
	c := thaw.Spec.Template.Spec.Containers[0]
	for _, arg := range []string{"--activator=module", "--module-address=$(POD_IP):18001"} {
		if !slices.Contains(c.Args, arg) {
			t.Errorf("thaw args %v lack %s", c.Args, arg)
		}
	}
	if !slices.ContainsFunc(c.Ports, func(p corev1.ContainerPort) bool { return p.Name == "module" && p.ContainerPort == 18001 }) {
		t.Errorf("thaw ports %v lack module 18001", c.Ports)
	}
	var svc corev1.Service
	find(t, objs, "Service", "thaw-grpc", &svc)
	if !slices.ContainsFunc(svc.Spec.Ports, func(p corev1.ServicePort) bool { return p.Name == "module" && p.Port == 18001 }) {
		t.Errorf("Service thaw-grpc ports %v lack module 18001 (the bootstrap's thaw_module cluster resolves it)", svc.Spec.Ports)
	}
	var np networkingv1.NetworkPolicy
	find(t, objs, "NetworkPolicy", "thaw", &np)
	open := false
	for _, r := range np.Spec.Ingress {
		if len(r.Ports) == 1 && r.Ports[0].Port != nil && r.Ports[0].Port.String() == "module" {
			open = len(r.From) == 1 && r.From[0].PodSelector != nil &&
				r.From[0].PodSelector.MatchLabels["app.kubernetes.io/name"] == "envoy" && r.From[0].NamespaceSelector == nil
		}
	}
	if !open {
		t.Errorf("NetworkPolicy does not open port module to the Envoy fleet alone: %+v", np.Spec.Ingress)
	}

	pod := fleet.Spec.Template.Spec
	if len(pod.InitContainers) != 1 {
		t.Fatalf("Envoy pod init containers %v, want the module copy", pod.InitContainers)
	}
	ic := pod.InitContainers[0]
	if !strings.HasPrefix(ic.Image, "ghcr.io/thaw-dev/thaw:") || !slices.Equal(ic.Args, []string{"install-module", "/thaw-module"}) {
		t.Errorf("init container %s %v, want thaw's image running install-module /thaw-module", ic.Image, ic.Args)
	}
	vol := func(mounts []corev1.VolumeMount, at string) string {
		for _, m := range mounts {
			if m.MountPath == at {
				return m.Name
			}
		}
		return ""
	}
	envoyC := pod.Containers[0]
	if v := vol(ic.VolumeMounts, "/thaw-module"); v == "" || vol(envoyC.VolumeMounts, fleetModuleDir) != v {
		t.Errorf("the init container's /thaw-module and Envoy's %s are not one volume (%v, %v)", fleetModuleDir, ic.VolumeMounts, envoyC.VolumeMounts)
	}
	if i := slices.IndexFunc(envoyC.VolumeMounts, func(m corev1.VolumeMount) bool { return m.MountPath == fleetModuleDir }); i < 0 || !envoyC.VolumeMounts[i].ReadOnly {
		t.Errorf("Envoy mounts the module directory writable: %v", envoyC.VolumeMounts)
	}
	if ic.SecurityContext == nil || ic.SecurityContext.ReadOnlyRootFilesystem == nil || !*ic.SecurityContext.ReadOnlyRootFilesystem {
		t.Errorf("init container security context %+v", ic.SecurityContext)
	}

	var cm corev1.ConfigMap
	find(t, objs, "ConfigMap", "envoy-bootstrap", &cm)
	b := cm.Data["bootstrap.yaml"]
	for _, want := range []string{"name: thaw_module", fmt.Sprintf("port_value: %d", envoy.DefaultModuleBridgePort), "port_value: 18001",
		"path: /activator/v1/healthz"} {
		if !strings.Contains(b, want) {
			t.Errorf("the Envoy bootstrap of the overlay lacks %q", want)
		}
	}
	for _, sds := range []string{envoy.ClientCertSDSFile, envoy.TrustSDSFile} {
		if cm.Data[sds] == "" {
			t.Errorf("the bootstrap ConfigMap lost %s", sds)
		}
	}
}

// TestManifestsModuleImageFollowsThaw: the image pinned in manifests/base
// (`kustomize edit set image thaw=...`, docs/kubernetes.md) is the image
// of the Envoy pods' module copy too, so the module and thaw are one
// version. Built from a copy of manifests/ with the pin changed.
func TestManifestsModuleImageFollowsThaw(t *testing.T) {
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS("../../manifests")); err != nil {
		t.Fatal(err)
	}
	base := filepath.Join(dir, "base", "kustomization.yaml")
	b, err := os.ReadFile(base)
	if err != nil {
		t.Fatal(err)
	}
	const pin = "newName: registry.example/thaw\n  newTag: v9.9.9"
	pinned := strings.Replace(string(b), "newName: ghcr.io/thaw-dev/thaw\n  newTag: latest", pin, 1)
	if pinned == string(b) {
		t.Fatal("manifests/base/kustomization.yaml: thaw's image setting not found")
	}
	if err := os.WriteFile(base, []byte(pinned), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"", "overlays/envoy-gateway", "overlays/envoy-gateway-module"} {
		rm, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), filepath.Join(dir, d))
		if err != nil {
			t.Fatalf("kustomize build %s: %v", d, err)
		}
		images := map[string]string{}
		for _, r := range rm.Resources() {
			if r.GetKind() == "EnvoyProxy" {
				cs, _ := r.GetSlice("spec.provider.kubernetes.envoyDeployment.initContainers")
				for _, c := range cs {
					m := c.(map[string]any)
					images["EnvoyProxy/"+m["name"].(string)] = m["image"].(string)
				}
			}
			if r.GetKind() != "Deployment" {
				continue
			}
			for _, path := range [][]string{{"spec", "template", "spec", "containers"}, {"spec", "template", "spec", "initContainers"}} {
				cs, _ := r.GetSlice(strings.Join(path, "."))
				for _, c := range cs {
					m := c.(map[string]any)
					images[r.GetName()+"/"+m["name"].(string)] = m["image"].(string)
				}
			}
		}
		want := "registry.example/thaw:v9.9.9"
		if images["thaw/thaw"] != want || images["envoy/thaw-module"] != want {
			t.Errorf("manifests/%s with thaw pinned to %s: images %v", d, want, images)
		}
		if eg, ok := images["EnvoyProxy/thaw-module"]; (d == "overlays/envoy-gateway-module") != ok || (ok && eg != want) {
			t.Errorf("manifests/%s with thaw pinned to %s: EG's module copy %q (present %v)", d, want, eg, ok)
		}
	}
}
