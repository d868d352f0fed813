package peers

import (
	"bytes"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/thaw-dev/thaw/e2e/harness"
)

// kedaCRDs are the HTTPScaledObject and InterceptorRoute resources the
// interceptor watches (our own minimal schema, see the file's comment).
//
//go:embed crds.yaml
var kedaCRDs []byte

// The KEDA side's names: the interceptor forwards to
// http://<KedaService>.<KedaNamespace>:<port>, which the interceptor's own
// hosts file maps to 127.0.0.1.
const (
	KedaNamespace = "bench"
	KedaService   = "backend"
	KedaHost      = "keda.bench"
	// kedaReadyMarker is the EndpointSlice address that tells the
	// interceptor the backend is ready. EndpointSlices refuse loopback
	// addresses; this TEST-NET-1 address (RFC 5737) is never sent traffic.
	kedaReadyMarker = "192.0.2.1"
)

var (
	crdGVR   = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	httpsoGV = schema.GroupVersionResource{Group: "http.keda.sh", Version: "v1alpha1", Resource: "httpscaledobjects"}
)

// KedaAPI is the Kubernetes API the interceptor reads its routes and
// readiness from, with the benchmark's objects in it.
type KedaAPI struct {
	api    *harness.APIServer
	client kubernetes.Interface
	// Kubeconfig is the path of a kubeconfig for this API, for the
	// interceptor (KedaEnv).
	Kubeconfig string
}

// StartKedaAPI starts etcd and kube-apiserver under dir, installs the CRDs
// and creates, in namespace bench: the Service "backend", an
// HTTPScaledObject routing host keda.bench to it on backendPort, and an
// EndpointSlice with one ready endpoint (the readiness marker).
func StartKedaAPI(ctx context.Context, dir string, backendPort int) (*KedaAPI, error) {
	api, err := harness.StartAPIServer(ctx, dir, "")
	if err != nil {
		return nil, err
	}
	k := &KedaAPI{api: api, Kubeconfig: api.Kubeconfig}
	if err := k.setup(ctx, backendPort); err != nil {
		_ = api.Stop()
		return nil, fmt.Errorf("keda api objects: %w", err)
	}
	return k, nil
}

// Stop stops kube-apiserver and etcd.
func (k *KedaAPI) Stop() error { return k.api.Stop() }

func (k *KedaAPI) setup(ctx context.Context, backendPort int) error {
	dyn, err := dynamic.NewForConfig(k.api.Config)
	if err != nil {
		return err
	}
	if k.client, err = kubernetes.NewForConfig(k.api.Config); err != nil {
		return err
	}
	for _, doc := range bytes.Split(kedaCRDs, []byte("\n---\n")) {
		obj := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(doc, &obj.Object); err != nil {
			return fmt.Errorf("crd yaml: %w", err)
		}
		if _, err := dyn.Resource(crdGVR).Create(ctx, obj, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create crd %s: %w", obj.GetName(), err)
		}
		if err := waitEstablished(ctx, dyn, obj.GetName()); err != nil {
			return err
		}
	}
	if _, err := k.client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: KedaNamespace}}, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("namespace: %w", err)
	}
	port := int32(backendPort)
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: KedaService, Namespace: KedaNamespace},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: port, TargetPort: intstr.FromInt32(port)}}}}
	if _, err := k.client.CoreV1().Services(KedaNamespace).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("service: %w", err)
	}
	so := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "http.keda.sh/v1alpha1",
		"kind":       "HTTPScaledObject",
		"metadata":   map[string]any{"name": KedaService, "namespace": KedaNamespace},
		"spec": map[string]any{
			"hosts":          []any{KedaHost},
			"pathPrefixes":   []any{"/"},
			"scaleTargetRef": map[string]any{"name": KedaService, "kind": "Deployment", "apiVersion": "apps/v1", "service": KedaService, "port": int64(backendPort)},
		},
	}}
	if _, err := dyn.Resource(httpsoGV).Namespace(KedaNamespace).Create(ctx, so, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("httpscaledobject: %w", err)
	}
	return k.SetReady(ctx, backendPort, true)
}

// SetReady creates or updates the backend's EndpointSlice: one endpoint,
// the readiness marker, ready or not.
func (k *KedaAPI) SetReady(ctx context.Context, backendPort int, ready bool) error {
	es := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: KedaService + "-bench", Namespace: KedaNamespace,
			Labels: map[string]string{discoveryv1.LabelServiceName: KedaService}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints: []discoveryv1.Endpoint{{Addresses: []string{kedaReadyMarker},
			Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(ready)}}},
		Ports: []discoveryv1.EndpointPort{{Name: ptr.To("http"), Port: ptr.To(int32(backendPort)), Protocol: ptr.To(corev1.ProtocolTCP)}},
	}
	c := k.client.DiscoveryV1().EndpointSlices(KedaNamespace)
	cur, err := c.Get(ctx, es.Name, metav1.GetOptions{})
	if err != nil {
		_, err = c.Create(ctx, es, metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("endpointslice: %w", err)
		}
		return nil
	}
	es.ResourceVersion = cur.ResourceVersion
	if _, err := c.Update(ctx, es, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("endpointslice: %w", err)
	}
	return nil
}

// waitEstablished polls the CRD until its Established condition is True
// (every 100 ms, within 30 s).
func waitEstablished(ctx context.Context, dyn dynamic.Interface, name string) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for {
		obj, err := dyn.Resource(crdGVR).Get(ctx, name, metav1.GetOptions{})
		if err == nil {
			conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
			for _, c := range conds {
				m, _ := c.(map[string]any)
				if m["type"] == "Established" && m["status"] == "True" {
					return nil
				}
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("crd %s not established: %w", name, errors.Join(ctx.Err(), err))
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// KedaEnv is the interceptor's environment: its two ports, the API it
// watches (namespace bench only), no metrics exporter and no shutdown
// delay; everything else is the interceptor's default.
func KedaEnv(proxyPort, adminPort int, kubeconfig string) []string {
	return []string{
		fmt.Sprintf("KEDA_HTTP_PROXY_PORT=%d", proxyPort),
		fmt.Sprintf("KEDA_HTTP_ADMIN_PORT=%d", adminPort),
		"KEDA_HTTP_WATCH_NAMESPACE=" + KedaNamespace,
		"OTEL_PROM_EXPORTER_ENABLED=false",
		"KEDA_HTTP_SHUTDOWN_DELAY=0s", // no load balancer to wait for

		"KUBECONFIG=" + kubeconfig,
	}
}
