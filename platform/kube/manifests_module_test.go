package kube

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"

	"github.com/thaw-dev/thaw/envoy"
)

// fleetModuleDir is where the fleet's Envoy loads the module from: the
// default of thaw run's --activator-module (cmd/thaw).
const fleetModuleDir = "/etc/thaw-module"

// TestManifestsActivatorModule: manifests/overlays/activator-module runs
// thaw with --activator=module and its module port on the pod IP, opens
// that port to the Envoy fleet only, copies the module from thaw's image
// into each Envoy pod where thaw run's default --activator-module points,
// and gives Envoy the bootstrap with the module bridge to that port.
func TestManifestsActivatorModule(t *testing.T) {
	objs := buildManifests(t, "overlays/activator-module")
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
