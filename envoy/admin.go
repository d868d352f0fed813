package envoy

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"

	adminv3 "github.com/envoyproxy/go-control-plane/envoy/admin/v3"
	"google.golang.org/protobuf/encoding/protojson"
)

// maxClustersBody bounds the admin /clusters answer read (bytes): about
// 2 KiB per host, so room for tens of thousands of hosts.
const maxClustersBody = 64 << 20

// HostLoad is what Envoy reports about one upstream host, summed over the
// clusters asked for.
type HostLoad struct {
	// RequestsActive is the requests in flight to the host (per-host gauge
	// rq_active).
	RequestsActive int
	// ConnectionsActive is the connections Envoy holds open to the host,
	// busy or idle (per-host gauge cx_active).
	ConnectionsActive int
}

// HostLoads asks the Envoy admin server at adminURL
// ("http://127.0.0.1:9901") for its clusters (GET /clusters?format=json)
// and returns, per upstream host address ("ip:port"), its HostLoad summed
// over the clusters named in clusters (all clusters when empty). Hosts with
// neither requests nor connections may be absent. Per-host stats are not
// filtered by the stats matcher. Hosts an EDS update removed are gone from
// the answer at once (Envoy closes their idle connections and their busy
// ones when the request ends), so a removed host's requests in flight are
// not seen here; hosts of an ORIGINAL_DST cluster stay listed while Envoy
// keeps a connection to them. Named clusters are asked for by name (the
// admin filter), so the answer does not grow with the clusters Envoy has:
// with every cluster, at 100,000 revisions, Envoy's main thread spends
// seconds on it, during which it applies no xDS update. Errors: transport,
// a non-200 status, or a body that is not the admin Clusters message.
func HostLoads(ctx context.Context, c *http.Client, adminURL string, clusters ...string) (map[string]HostLoad, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, adminURL+ClustersPath(clusters...), nil)
	if err != nil {
		return nil, fmt.Errorf("envoy admin clusters: %w", err)
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, fmt.Errorf("envoy admin clusters: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxClustersBody))
	if err != nil {
		return nil, fmt.Errorf("envoy admin clusters: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("envoy admin clusters: status %d", resp.StatusCode)
	}
	return ParseHostLoads(body, clusters...)
}

// ClustersPath is the admin path HostLoads asks for: /clusters in JSON,
// only the named clusters when some are named (filter: an anchored RE2
// alternation of the names, quoted).
func ClustersPath(clusters ...string) string {
	if len(clusters) == 0 {
		return "/clusters?format=json"
	}
	quoted := make([]string, len(clusters))
	for i, c := range clusters {
		quoted[i] = regexp.QuoteMeta(c)
	}
	return "/clusters?format=json&filter=" + url.QueryEscape("^("+strings.Join(quoted, "|")+")$")
}

// ParseHostLoads is HostLoads' parsing of an admin /clusters?format=json
// body. Errors: the body is not a Clusters message.
func ParseHostLoads(body []byte, clusters ...string) (map[string]HostLoad, error) {
	var doc adminv3.Clusters
	if err := (protojson.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(body, &doc); err != nil {
		return nil, fmt.Errorf("envoy admin clusters: %w", err)
	}
	want := make(map[string]bool, len(clusters))
	for _, c := range clusters {
		want[c] = true
	}
	out := map[string]HostLoad{}
	for _, cs := range doc.GetClusterStatuses() {
		if len(want) > 0 && !want[cs.GetName()] {
			continue
		}
		for _, h := range cs.GetHostStatuses() {
			sa := h.GetAddress().GetSocketAddress()
			if sa == nil {
				continue // internal listener or pipe: not a backend
			}
			addr := net.JoinHostPort(sa.GetAddress(), strconv.Itoa(int(sa.GetPortValue())))
			l := out[addr]
			for _, m := range h.GetStats() {
				switch m.GetName() {
				case "rq_active":
					l.RequestsActive += int(m.GetValue())
				case "cx_active":
					l.ConnectionsActive += int(m.GetValue())
				}
			}
			out[addr] = l
		}
	}
	return out, nil
}
