package harness

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"k8s.io/client-go/rest"
)

// bindAttempts bounds how often a component is restarted on fresh ports
// after its port was taken between FreePort and its bind.
const bindAttempts = 4

// errPortTaken marks a start that failed because another process bound the
// chosen port first; the caller retries with fresh ports.
var errPortTaken = errors.New("port taken before bind")

// startOnFreePorts runs start with fresh ports until it succeeds, fails for
// another reason than a port taken in between, or bindAttempts are spent.
// start returns errPortTaken (wrapped) when the process lost its port.
func startOnFreePorts(start func() error) error {
	var err error
	for range bindAttempts {
		if err = start(); !errors.Is(err, errPortTaken) {
			return err
		}
	}
	return err
}

// lostPort reports whether p exited because its listen address was in use,
// judged from its log.
func lostPort(p *Process) bool {
	select {
	case <-p.Exited():
	default:
		return false
	}
	tail := p.LogTail(60)
	return strings.Contains(tail, "address already in use") || strings.Contains(tail, "Address already in use")
}

// waitStarted waits for url through client; when p exited because its port
// was taken it returns errPortTaken.
func waitStarted(ctx context.Context, p *Process, client *http.Client, url string) error {
	err := WaitForURL(ctx, p, client, url)
	if err != nil && lostPort(p) {
		return fmt.Errorf("%s: %w: %w", p.Name(), errPortTaken, err)
	}
	return err
}

// APIServer is a bare Kubernetes API: etcd and kube-apiserver on
// 127.0.0.1, no controllers and no nodes. Programs outside tests (the
// peers benchmark) use it for components that only read and watch API
// objects. Stop it with Stop.
type APIServer struct {
	// Kubeconfig is the path of an admin kubeconfig (user in
	// system:masters).
	Kubeconfig string
	// Config is the admin REST config.
	Config *rest.Config

	procs []*Process
}

// StartAPIServer starts etcd and kube-apiserver from binDir (empty:
// $KUBE_BIN_DIR, else DefaultBinDir()) with their state, credentials and
// logs under dir, and returns once /readyz answers or ctx ends. A component
// whose port was taken between choosing it and binding it is restarted on
// fresh ports (at most 4 times). On error everything started is stopped.
func StartAPIServer(ctx context.Context, dir, binDir string) (*APIServer, error) {
	if binDir == "" {
		binDir = os.Getenv("KUBE_BIN_DIR")
	}
	if binDir == "" {
		binDir = DefaultBinDir()
	}
	for _, name := range []string{"etcd", "kube-apiserver"} {
		if _, err := os.Stat(binPath(binDir, name)); err != nil {
			return nil, fmt.Errorf("api server: %s not found in %s: run `make tools` (%w)", name, binDir, err)
		}
	}
	pki, err := newClusterPKI(dir)
	if err != nil {
		return nil, fmt.Errorf("api server: credentials: %w", err)
	}
	a := &APIServer{}
	run := func(name string, args []string) (*Process, error) {
		p, err := startProcess(ProcessConfig{Name: name, Path: binPath(binDir, name), Args: args, LogDir: dir}, func() string { return dir })
		if err != nil {
			return nil, fmt.Errorf("start %s: %w", name, err)
		}
		a.procs = append(a.procs, p)
		return p, nil
	}
	freePort := func() (int, error) { return freeLoopbackPort() }
	var etcdPort int
	err = startOnFreePorts(func() error {
		var peerPort int
		if etcdPort, err = freePort(); err == nil {
			peerPort, err = freePort()
		}
		if err != nil {
			return err
		}
		_ = os.RemoveAll(filepath.Join(dir, "etcd"))
		etcd, err := run("etcd", etcdArgs(filepath.Join(dir, "etcd"), etcdPort, peerPort))
		if err != nil {
			return err
		}
		return waitStarted(ctx, etcd, http.DefaultClient, "http://"+LoopbackAddr(etcdPort)+"/health")
	})
	if err != nil {
		a.Stop()
		return nil, fmt.Errorf("api server: etcd not healthy: %w", err)
	}
	client, err := adminClient(pki)
	if err != nil {
		a.Stop()
		return nil, err
	}
	var server string
	err = startOnFreePorts(func() error {
		apiPort, err := freePort()
		if err != nil {
			return err
		}
		apiserver, err := run("kube-apiserver", apiserverArgs(pki, etcdPort, apiPort))
		if err != nil {
			return err
		}
		server = "https://" + LoopbackAddr(apiPort)
		return waitStarted(ctx, apiserver, client, server+"/readyz")
	})
	if err != nil {
		a.Stop()
		return nil, fmt.Errorf("api server: kube-apiserver not ready: %w", err)
	}
	a.Kubeconfig = filepath.Join(dir, "admin.kubeconfig")
	if err := writeKubeconfig(a.Kubeconfig, server, pki.caPEM, pki.adminCertPEM, pki.adminKeyPEM, ""); err != nil {
		a.Stop()
		return nil, fmt.Errorf("api server: kubeconfig: %w", err)
	}
	a.Config = &rest.Config{
		Host:            server,
		TLSClientConfig: rest.TLSClientConfig{CAData: pki.caPEM, CertData: pki.adminCertPEM, KeyData: pki.adminKeyPEM},
		QPS:             200,
		Burst:           400,
	}
	return a, nil
}

// Stop stops every process StartAPIServer started (by pid, SIGTERM then
// SIGKILL after DefaultStopGrace), the API server first, and returns their
// stop errors joined.
func (a *APIServer) Stop() error {
	var errs []error
	for i := len(a.procs) - 1; i >= 0; i-- {
		errs = append(errs, a.procs[i].Stop(DefaultStopGrace))
	}
	return errors.Join(errs...)
}

// adminClient is a plain HTTPS client with the admin certificate of pki.
func adminClient(pki *clusterPKI) (*http.Client, error) {
	cert, err := tls.X509KeyPair(pki.adminCertPEM, pki.adminKeyPEM)
	if err != nil {
		return nil, fmt.Errorf("admin key pair: %w", err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(pki.caPEM)
	return &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{
		RootCAs: roots, Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12,
	}}}, nil
}
