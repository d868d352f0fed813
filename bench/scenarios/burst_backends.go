package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/thaw-dev/thaw/revision"
)

// backendPeaks reads the most requests each backend of the local revision
// name had at once, straight from every backend's /stats (not through
// Envoy, so no backend is missed and no reading takes a slot): the
// backends are the hosts of the revision's cluster in Envoy's admin
// /clusters. It returns the peaks by backend address; an error when the
// cluster lists no host or a backend does not answer.
func backendPeaks(ctx context.Context, th *thaw, name string) (map[string]int64, error) {
	body, err := fetchBody(ctx, th.envoyAdminURL+"/clusters")
	if err != nil {
		return nil, fmt.Errorf("envoy /clusters: %w", err)
	}
	addrs := clusterHosts(body, revision.ClusterName(revision.Key{Namespace: "local", Name: name}))
	if len(addrs) == 0 {
		return nil, fmt.Errorf("envoy /clusters: no host in the cluster of local/%s", name)
	}
	c := &http.Client{Timeout: 2 * time.Second}
	out := make(map[string]int64, len(addrs))
	for _, a := range addrs {
		ws, err := fetchStats(ctx, c, "http://"+a, "")
		if err != nil {
			return out, fmt.Errorf("backend %s: %w", a, err)
		}
		out[a] = ws.MaxInflight
	}
	return out, nil
}

// clusterHosts returns the host addresses of cluster in Envoy's admin
// /clusters text ("<cluster>::<host:port>::<stat>::<value>" lines),
// sorted, each once.
func clusterHosts(body []byte, cluster string) []string {
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(body))
	prefix := cluster + "::"
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), prefix)
		if !ok {
			continue
		}
		host, _, ok := strings.Cut(rest, "::")
		// Host lines start with an address (a digit, or '[' for IPv6);
		// the cluster's own lines with a word.
		if ok && host != "" && (host[0] >= '0' && host[0] <= '9' || host[0] == '[') {
			out = append(out, host)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}
