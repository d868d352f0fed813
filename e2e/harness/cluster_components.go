package harness

import (
	"fmt"
	"path/filepath"
	"strings"
)

// Flags of each control-plane component. Everything listens on 127.0.0.1;
// kube-controller-manager and kube-scheduler serve nothing (--secure-port=0)
// and the harness judges them by their effects.

// controllers run by kube-controller-manager: what Deployments,
// ReplicaSets, StatefulSets, service accounts and namespace deletion need.
var controllers = []string{
	"deployment",
	"replicaset",
	"statefulset",
	"serviceaccount",
	"serviceaccount-token",
	"namespace",
	"garbagecollector",
}

// serviceClusterIPRange is the virtual range for Service cluster IPs. No
// kube-proxy runs, so nothing ever routes to it; it sits in loopback space so
// that no address outside 127.0.0.0/8 appears anywhere in the cluster.
const serviceClusterIPRange = "127.9.0.0/16"

// PodCIDRPrefix is the /16 that fake nodes take their pod CIDRs from: node i
// gets 127.8.<i>.0/24, so every pod IP is on the loopback interface.
const PodCIDRPrefix = "127.8."

func etcdArgs(dataDir string, clientPort, peerPort int) []string {
	client := "http://" + LoopbackAddr(clientPort)
	peer := "http://" + LoopbackAddr(peerPort)
	return []string{
		"--name=e2e",
		"--data-dir=" + dataDir,
		"--listen-client-urls=" + client,
		"--advertise-client-urls=" + client,
		"--listen-peer-urls=" + peer,
		"--initial-advertise-peer-urls=" + peer,
		"--initial-cluster=e2e=" + peer,
		"--unsafe-no-fsync", // test data: durability buys nothing, fsync costs ms per write
		"--log-level=warn",
	}
}

func apiserverArgs(pki *clusterPKI, etcdPort, securePort int) []string {
	return []string{
		"--etcd-servers=http://" + LoopbackAddr(etcdPort),
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		fmt.Sprintf("--secure-port=%d", securePort),
		"--tls-cert-file=" + pki.servingCert,
		"--tls-private-key-file=" + pki.servingKey,
		"--client-ca-file=" + pki.caCert,
		"--authorization-mode=Node,RBAC",
		"--service-account-issuer=https://kubernetes.default.svc",
		"--service-account-key-file=" + pki.saPub,
		"--service-account-signing-key-file=" + pki.saKey,
		"--service-cluster-ip-range=" + serviceClusterIPRange,
		// The only apiserver address is loopback, which Endpoints refuse.
		"--endpoint-reconciler-type=none",
		// It taints new nodes not-ready; the node lifecycle controller that
		// would lift the taint does not run (kwok keeps the nodes Ready).
		"--disable-admission-plugins=TaintNodesByCondition",
		// Tests burst on purpose; priority and fairness would queue them.
		"--enable-priority-and-fairness=false",
		"--profiling=false",
	}
}

func controllerManagerArgs(pki *clusterPKI, kubeconfig string) []string {
	return []string{
		"--kubeconfig=" + kubeconfig,
		"--controllers=" + strings.Join(controllers, ","),
		"--leader-elect=false",
		"--secure-port=0",
		"--service-account-private-key-file=" + pki.saKey,
		"--root-ca-file=" + pki.caCert,
		"--kube-api-qps=200",
		"--kube-api-burst=400",
		"--profiling=false",
	}
}

func schedulerArgs(kubeconfig string) []string {
	return []string{
		"--kubeconfig=" + kubeconfig,
		"--leader-elect=false",
		"--secure-port=0",
		"--kube-api-qps=200",
		"--kube-api-burst=400",
		"--profiling=false",
	}
}

func kwokArgs(kubeconfig, config string) []string {
	return []string{
		"--kubeconfig=" + kubeconfig,
		"--config=" + config,
		"--manage-all-nodes=true",
		// Only used for pods on nodes without spec.podCIDR (the harness
		// always sets it).
		"--cidr=" + PodCIDRPrefix + "255.0/24",
		"--node-ip=127.0.0.1",
		"--node-lease-duration-seconds=40",
	}
}

// binaries are the executables StartCluster needs in the bin directory.
var binaries = []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok"}

// binPath returns dir/name.
func binPath(dir, name string) string { return filepath.Join(dir, name) }
