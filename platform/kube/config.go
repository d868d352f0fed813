package kube

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// DefaultNamespace is thaw's own namespace in manifests/.
const DefaultNamespace = "thaw-system"

// serviceAccountNamespaceFile holds the pod's namespace in-cluster.
const serviceAccountNamespaceFile = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

// LoadRESTConfig returns the client configuration of `thaw run`: the
// kubeconfig file when path is set; else in-cluster configuration when
// running in a pod; else the usual kubeconfig loading rules ($KUBECONFIG,
// ~/.kube/config) with their current context. QPS and burst are raised to
// 50 and 100 (client-go's 5/10 would throttle scale patches during bursts).
func LoadRESTConfig(path string) (*rest.Config, error) {
	var (
		cfg *rest.Config
		err error
	)
	switch {
	case path != "":
		cfg, err = clientcmd.BuildConfigFromFlags("", path)
	default:
		cfg, err = rest.InClusterConfig()
		if errors.Is(err, rest.ErrNotInCluster) {
			rules := clientcmd.NewDefaultClientConfigLoadingRules()
			cfg, err = clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
		}
	}
	if err != nil {
		return nil, fmt.Errorf("kube: client configuration: %w", err)
	}
	cfg.QPS, cfg.Burst = 50, 100
	cfg.UserAgent = "thaw"
	return cfg, nil
}

// DefaultIdentity is the leader-election identity of this replica: $POD_NAME
// (set by manifests/ from the downward API), else the host name.
func DefaultIdentity() string {
	if v := os.Getenv("POD_NAME"); v != "" {
		return v
	}
	h, err := os.Hostname()
	if err != nil || h == "" {
		return "thaw"
	}
	return h
}

// DefaultLeaseNamespace is where the Lease lives: $POD_NAMESPACE, else the
// namespace of the pod's service account, else DefaultNamespace.
func DefaultLeaseNamespace() string {
	if v := os.Getenv("POD_NAMESPACE"); v != "" {
		return v
	}
	if b, err := os.ReadFile(serviceAccountNamespaceFile); err == nil {
		if ns := strings.TrimSpace(string(b)); ns != "" {
			return ns
		}
	}
	return DefaultNamespace
}
