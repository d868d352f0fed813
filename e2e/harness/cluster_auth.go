package harness

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// ServiceAccountToken creates the service account ns/name if it does not
// exist and returns a bearer token for it from the TokenRequest API, valid
// for one hour. RBAC applies to it: it can do nothing until the test binds
// it a role. The namespace must exist. It fails the test on error.
func (c *Cluster) ServiceAccountToken(t testing.TB, ns, name string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	_, err := c.Client.CoreV1().ServiceAccounts(ns).Create(ctx, sa, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("create service account %s/%s: %v", ns, name, err)
	}
	expiry := int64(3600)
	req := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &expiry}}
	resp, err := c.Client.CoreV1().ServiceAccounts(ns).CreateToken(ctx, name, req, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("token for service account %s/%s: %v", ns, name, err)
	}
	if resp.Status.Token == "" {
		t.Fatalf("token for service account %s/%s: %v", ns, name, errNoToken)
	}
	return resp.Status.Token
}

// ConfigForToken returns a REST config for the cluster that authenticates
// with the bearer token (for example from ServiceAccountToken) instead of
// the admin certificate.
func (c *Cluster) ConfigForToken(token string) *rest.Config {
	return &rest.Config{
		Host:            c.Config.Host,
		TLSClientConfig: rest.TLSClientConfig{CAData: c.pki.caPEM},
		BearerToken:     token,
		QPS:             c.Config.QPS,
		Burst:           c.Config.Burst,
	}
}

// ClientForToken returns a clientset built from ConfigForToken(token).
func (c *Cluster) ClientForToken(t testing.TB, token string) kubernetes.Interface {
	t.Helper()
	client, err := kubernetes.NewForConfig(c.ConfigForToken(token))
	if err != nil {
		t.Fatalf("client for token: %v", err)
	}
	return client
}

// KubeconfigForToken writes a kubeconfig that authenticates with token into
// a temp directory of t and returns its path, for processes under test that
// must run with a service account's permissions.
func (c *Cluster) KubeconfigForToken(t testing.TB, token string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "token.kubeconfig")
	if err := writeKubeconfig(path, c.Config.Host, c.pki.caPEM, nil, nil, token); err != nil {
		t.Fatalf("kubeconfig for token: %v", err)
	}
	return path
}

// CACertPEM returns the PEM of the CA that signed the apiserver's serving
// certificate.
func (c *Cluster) CACertPEM() []byte { return c.pki.caPEM }

// String names the cluster's apiserver, for logs.
func (c *Cluster) String() string { return fmt.Sprintf("e2e cluster at %s", c.Config.Host) }
