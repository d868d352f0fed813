package xds

import (
	"strings"

	"github.com/thaw-dev/thaw/revision"
)

// clusterPrefix starts every revision cluster name.
const clusterPrefix = "rev_"

var nameReplacer = strings.NewReplacer(".", "_", "/", "_")

// ClusterName returns the Envoy cluster (and ClusterLoadAssignment) name of
// a revision: "rev_<namespace>_<name>" with '.' and '/' replaced by '_'.
// Kubernetes namespaces cannot contain '_' so the first '_' after the prefix
// always ends the namespace.
//
// TODO: switch to revision.ClusterName once revision/cluster.go lands.
func ClusterName(key revision.Key) string {
	return clusterPrefix + nameReplacer.Replace(key.Namespace) + "_" + nameReplacer.Replace(key.Name)
}
