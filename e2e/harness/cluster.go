package harness

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// DefaultBinDir returns where `make tools` links the control-plane binaries
// when KUBE_BIN_DIR is not set: .tools/bin in the repository.
func DefaultBinDir() string { return filepath.Join(RepoRoot(), ".tools", "bin") }

// ClusterOptions configures StartCluster. The zero value is one fake node,
// pods Ready only once a PodRunner serves them, binaries from KUBE_BIN_DIR.
type ClusterOptions struct {
	// Nodes is the number of fake kwok nodes (default 1, at most 250). Node
	// i is named "kwok-node-<i>" and has pod CIDR 127.8.<i>.0/24.
	Nodes int
	// ImmediateReady makes kwok mark pods Ready as soon as they run, as
	// kwok's own default stages do. By default pods become Running with an
	// IP but stay not Ready until a PodRunner listens on the pod IP and
	// marks them Ready, like a kubelet readiness probe.
	ImmediateReady bool
	// BinDir holds etcd, kube-apiserver, kube-controller-manager,
	// kube-scheduler and kwok; default $KUBE_BIN_DIR, else DefaultBinDir().
	BinDir string
	// LogDir receives one <component>.log per process; default: a directory
	// under $THAW_E2E_LOG_DIR named after the test if that is set, else a
	// temp directory removed after the test.
	LogDir string
	// StartTimeout bounds the whole start (default 2m).
	StartTimeout time.Duration
}

// Cluster is a running local control plane: etcd, kube-apiserver,
// kube-controller-manager, kube-scheduler and kwok, all on 127.0.0.1, all
// stopped by the test's cleanup.
type Cluster struct {
	// Kubeconfig is the path of an admin kubeconfig (user in
	// system:masters), usable by processes under test.
	Kubeconfig string
	// Config is the admin REST config (QPS 200, burst 400).
	Config *rest.Config
	// Client is an admin clientset built from Config.
	Client kubernetes.Interface
	// Nodes are the names of the fake nodes, all Ready.
	Nodes []string
	// ImmediateReady tells how the cluster was started (see ClusterOptions).
	ImmediateReady bool
	// LogDir holds the component logs.
	LogDir string

	pki   *clusterPKI
	procs []*Process
}

// StartCluster starts a control plane for t and waits (bounded by
// opts.StartTimeout) until the apiserver is ready, every fake node is Ready
// and the controller manager has created the "default" service account. It
// fails the test if a binary is missing (telling to run `make tools`), a
// process exits early, or readiness times out. The test's cleanup stops
// every process it started, by pid, and logs their last lines if the test
// failed.
func StartCluster(t testing.TB, opts ClusterOptions) *Cluster {
	t.Helper()
	opts = opts.withDefaults(t)
	for _, name := range binaries {
		if _, err := os.Stat(binPath(opts.BinDir, name)); err != nil {
			t.Fatalf("e2e cluster: %s not found in %s (%v): run `make tools` (or set KUBE_BIN_DIR)", name, opts.BinDir, err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), opts.StartTimeout)
	defer cancel()
	start := time.Now()

	dir := t.TempDir()
	pki, err := newClusterPKI(dir)
	if err != nil {
		t.Fatalf("e2e cluster: credentials: %v", err)
	}
	c := &Cluster{ImmediateReady: opts.ImmediateReady, LogDir: opts.LogDir, pki: pki}
	run := func(name string, args []string, env ...string) *Process {
		p := StartProcess(t, ProcessConfig{Name: name, Path: binPath(opts.BinDir, name), Args: args, Env: env, LogDir: opts.LogDir})
		c.procs = append(c.procs, p)
		return p
	}

	// A component whose port another process took between FreePort and its
	// bind exits; it is started again on fresh ports, and the dead process
	// is dropped from c.procs so that Process returns the live one.
	retry := func(start func() (*Process, error)) error {
		return startOnFreePorts(func() error {
			p, err := start()
			if errors.Is(err, errPortTaken) {
				c.procs = c.procs[:len(c.procs)-1]
				t.Logf("e2e cluster: %s lost its port; starting it again", p.Name())
			}
			return err
		})
	}
	var etcdPort int
	if err := retry(func() (*Process, error) {
		var peerPort int
		etcdPort, peerPort = FreePort(t), FreePort(t)
		_ = os.RemoveAll(filepath.Join(dir, "etcd"))
		etcd := run("etcd", etcdArgs(filepath.Join(dir, "etcd"), etcdPort, peerPort))
		return etcd, waitStarted(ctx, etcd, http.DefaultClient, "http://"+LoopbackAddr(etcdPort)+"/health")
	}); err != nil {
		t.Fatalf("e2e cluster: etcd not healthy: %v", err)
	}

	var server string
	if err := retry(func() (*Process, error) {
		apiPort := FreePort(t)
		apiserver := run("kube-apiserver", apiserverArgs(pki, etcdPort, apiPort))
		server = "https://" + LoopbackAddr(apiPort)
		return apiserver, waitStarted(ctx, apiserver, c.adminHTTPClient(t), server+"/readyz")
	}); err != nil {
		t.Fatalf("e2e cluster: kube-apiserver not ready: %v", err)
	}

	c.Kubeconfig = filepath.Join(dir, "admin.kubeconfig")
	if err := writeKubeconfig(c.Kubeconfig, server, pki.caPEM, pki.adminCertPEM, pki.adminKeyPEM, ""); err != nil {
		t.Fatalf("e2e cluster: kubeconfig: %v", err)
	}
	c.Config = &rest.Config{
		Host:            server,
		TLSClientConfig: rest.TLSClientConfig{CAData: pki.caPEM, CertData: pki.adminCertPEM, KeyData: pki.adminKeyPEM},
		QPS:             200,
		Burst:           400,
	}
	c.Client, err = kubernetes.NewForConfig(c.Config)
	if err != nil {
		t.Fatalf("e2e cluster: client: %v", err)
	}

	kwokConfig := filepath.Join(dir, "kwok.yaml")
	if err := writeKwokConfig(kwokConfig, opts.ImmediateReady); err != nil {
		t.Fatalf("e2e cluster: %v", err)
	}
	run("kube-controller-manager", controllerManagerArgs(pki, c.Kubeconfig))
	run("kube-scheduler", schedulerArgs(c.Kubeconfig))
	// HOME points at an empty directory so that no ~/.kwok/kwok.yaml of the
	// machine's user is merged into the config.
	run("kwok", kwokArgs(c.Kubeconfig, kwokConfig), "HOME="+filepath.Join(dir, "kwok-home"))

	for i := range opts.Nodes {
		name := fmt.Sprintf("kwok-node-%d", i)
		if err := c.createNode(ctx, name, fmt.Sprintf("%s%d.0/24", PodCIDRPrefix, i)); err != nil {
			t.Fatalf("e2e cluster: %v", err)
		}
		c.Nodes = append(c.Nodes, name)
	}
	if err := c.waitFor(ctx, "fake nodes Ready", c.nodesReady); err != nil {
		t.Fatalf("e2e cluster: %v", err)
	}
	if err := c.waitFor(ctx, "service account default/default", func(ctx context.Context) (bool, error) {
		_, err := c.Client.CoreV1().ServiceAccounts("default").Get(ctx, "default", metav1.GetOptions{})
		return err == nil, ignoreNotFound(err)
	}); err != nil {
		t.Fatalf("e2e cluster: %v", err)
	}
	t.Logf("e2e cluster: ready in %v at %s (nodes %s, logs %s)", time.Since(start).Round(time.Millisecond), server, strings.Join(c.Nodes, ","), opts.LogDir)
	return c
}

// Process returns the running component named name ("etcd",
// "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok"), or
// nil. A test may Stop one to simulate its failure; cleanup stops the rest.
func (c *Cluster) Process(name string) *Process {
	for _, p := range c.procs {
		if p.Name() == name {
			return p
		}
	}
	return nil
}

func (o ClusterOptions) withDefaults(t testing.TB) ClusterOptions {
	if o.Nodes <= 0 {
		o.Nodes = 1
	}
	if o.Nodes > 250 {
		t.Fatalf("e2e cluster: %d nodes: at most 250 fit in 127.8.0.0/16", o.Nodes)
	}
	if o.BinDir == "" {
		o.BinDir = os.Getenv("KUBE_BIN_DIR")
	}
	if o.BinDir == "" {
		o.BinDir = DefaultBinDir()
	}
	if o.LogDir == "" {
		if root := os.Getenv("THAW_E2E_LOG_DIR"); root != "" {
			o.LogDir = filepath.Join(root, strings.NewReplacer("/", "_", " ", "_").Replace(t.Name()))
			if err := os.MkdirAll(o.LogDir, 0o755); err != nil {
				t.Fatalf("e2e cluster: log dir: %v", err)
			}
		} else {
			o.LogDir = t.TempDir()
		}
	}
	if o.StartTimeout <= 0 {
		o.StartTimeout = 2 * time.Minute
	}
	return o
}

// adminHTTPClient is a plain HTTPS client with the admin certificate, used
// before a clientset exists.
func (c *Cluster) adminHTTPClient(t testing.TB) *http.Client {
	t.Helper()
	client, err := adminClient(c.pki)
	if err != nil {
		t.Fatalf("e2e cluster: %v", err)
	}
	return client
}

func (c *Cluster) createNode(ctx context.Context, name, podCIDR string) error {
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Labels:      map[string]string{"type": "kwok", corev1.LabelHostname: name, corev1.LabelOSStable: "linux"},
			Annotations: map[string]string{"kwok.x-k8s.io/node": "fake"},
		},
		Spec: corev1.NodeSpec{PodCIDR: podCIDR, PodCIDRs: []string{podCIDR}},
	}
	if _, err := c.Client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create node %s: %w", name, err)
	}
	return nil
}

func (c *Cluster) nodesReady(ctx context.Context) (bool, error) {
	for _, name := range c.Nodes {
		node, err := c.Client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if !nodeReady(node) {
			return false, nil
		}
	}
	return true, nil
}

func nodeReady(node *corev1.Node) bool {
	for _, cond := range node.Status.Conditions {
		if cond.Type == corev1.NodeReady {
			return cond.Status == corev1.ConditionTrue
		}
	}
	return false
}

// waitFor polls cond until it reports true, ctx ends, or one of the
// cluster's processes exits. Errors from cond end the wait.
func (c *Cluster) waitFor(ctx context.Context, what string, cond func(context.Context) (bool, error)) error {
	ticker := time.NewTicker(pollInterval)
	defer ticker.Stop()
	for {
		ok, err := cond(ctx)
		if err != nil {
			return fmt.Errorf("waiting for %s: %w", what, err)
		}
		if ok {
			return nil
		}
		for _, p := range c.procs {
			select {
			case <-p.Exited():
				return fmt.Errorf("waiting for %s: %s: %w (%v)", what, p.Name(), ErrExited, p.ExitErr())
			default:
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w", what, ctx.Err())
		case <-ticker.C:
		}
	}
}

func ignoreNotFound(err error) error {
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// errNoToken is returned when the TokenRequest API answers without a token.
var errNoToken = errors.New("token request returned no token")
