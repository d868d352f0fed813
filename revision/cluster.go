package revision

import (
	"encoding/base32"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// Envoy cluster names of revisions.
//
// The xds translator names each revision's cluster with ClusterName and the
// stats sink maps the envoy.cluster_name label back with RevisionFromCluster,
// so both sides must use these two functions.
//
// Envoy's default stat tag extractor cuts the cluster name at the first '.',
// so a cluster name must not contain one. Two forms exist:
//
//   - Plain, for Kubernetes keys (namespace a DNS-1123 label, name a DNS-1123
//     subdomain): "rev_<namespace>_<name>" with every '.' of the name
//     replaced by '_'. Kubernetes names never contain '_' and namespaces never
//     contain '.', so the first '_' after "rev_" ends the namespace and every
//     later '_' was a '.': the mapping is reversible without a lookup table.
//   - Encoded, for any other key (for example a local revision named
//     "My_App"): "revx_<ns>_<name>" with both parts in lowercase unpadded
//     base32hex (characters 0-9a-v), which is reversible for any string.
//
// RevisionFromCluster accepts exactly the names ClusterName produces: it
// rejects a name whose decoded key would not encode back to the same name.
const (
	clusterPrefix        = "rev_"
	clusterEncodedPrefix = "revx_"
)

var clusterEncoding = base32.NewEncoding("0123456789abcdefghijklmnopqrstuv").WithPadding(base32.NoPadding)

// ClusterName returns the Envoy cluster name of a revision:
// "rev_<namespace>_<name>" (dots in the name replaced by '_') for Kubernetes
// keys, "revx_<base32hex ns>_<base32hex name>" otherwise. The result never
// contains '.' and RevisionFromCluster(ClusterName(k)) returns k, true for
// every key with a non-empty namespace and name.
func ClusterName(key Key) string {
	if isPlainKey(key) {
		return clusterPrefix + key.Namespace + "_" + strings.ReplaceAll(key.Name, ".", "_")
	}
	return clusterEncodedPrefix + clusterEncoding.EncodeToString([]byte(key.Namespace)) + "_" +
		clusterEncoding.EncodeToString([]byte(key.Name))
}

// RevisionFromCluster maps an Envoy cluster name made by ClusterName back to
// the revision key. ok is false for any other name (thaw's own clusters such
// as thaw_xds, clusters of other control planes, malformed names).
func RevisionFromCluster(name string) (key Key, ok bool) {
	switch {
	case strings.HasPrefix(name, clusterPrefix):
		ns, rest, found := strings.Cut(name[len(clusterPrefix):], "_")
		if !found {
			return Key{}, false
		}
		key = Key{Namespace: ns, Name: strings.ReplaceAll(rest, "_", ".")}
		if !isPlainKey(key) {
			return Key{}, false
		}
		return key, true
	case strings.HasPrefix(name, clusterEncodedPrefix):
		encNS, encName, found := strings.Cut(name[len(clusterEncodedPrefix):], "_")
		if !found {
			return Key{}, false
		}
		ns, err1 := clusterEncoding.DecodeString(encNS)
		n, err2 := clusterEncoding.DecodeString(encName)
		if err1 != nil || err2 != nil {
			return Key{}, false
		}
		key = Key{Namespace: string(ns), Name: string(n)}
		if key.Namespace == "" || key.Name == "" || isPlainKey(key) || ClusterName(key) != name {
			return Key{}, false
		}
		return key, true
	default:
		return Key{}, false
	}
}

// isPlainKey reports whether key can use the readable cluster name form: a
// DNS-1123 label namespace and a DNS-1123 subdomain name (lowercase
// alphanumerics, '-' and '.'; never '_').
func isPlainKey(key Key) bool {
	return len(validation.IsDNS1123Label(key.Namespace)) == 0 &&
		len(validation.IsDNS1123Subdomain(key.Name)) == 0
}
