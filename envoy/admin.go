package envoy

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"

	adminv3 "github.com/envoyproxy/go-control-plane/envoy/admin/v3"
	"google.golang.org/protobuf/encoding/protojson"
)

// maxClustersBody bounds the admin /clusters answer read (bytes): about
// 2 KiB per host, so room for tens of thousands of hosts.
const maxClustersBody = 64 << 20

// HostRequestsActive asks the Envoy admin server at adminURL
// ("http://127.0.0.1:9901") for its clusters (GET /clusters?format=json)
// and returns, per upstream host address ("ip:port"), the requests in
// flight to it (per-host gauge rq_active), summed over the clusters named
// in clusters (all clusters when empty). Hosts with no request in flight
// may be absent. Per-host stats are not filtered by the stats matcher;
// hosts an EDS update removed are gone from the answer at once, even with
// requests still in flight, so this ranks live backends but cannot tell
// when a removed one is idle. Errors: transport, a non-200 status, or a
// body that is not the admin Clusters message.
func HostRequestsActive(ctx context.Context, c *http.Client, adminURL string, clusters ...string) (map[string]int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, adminURL+"/clusters?format=json", nil)
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
	return ParseHostRequestsActive(body, clusters...)
}

// ParseHostRequestsActive is HostRequestsActive's parsing of an admin
// /clusters?format=json body. Errors: the body is not a Clusters message.
func ParseHostRequestsActive(body []byte, clusters ...string) (map[string]int, error) {
	var doc adminv3.Clusters
	if err := (protojson.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(body, &doc); err != nil {
		return nil, fmt.Errorf("envoy admin clusters: %w", err)
	}
	want := make(map[string]bool, len(clusters))
	for _, c := range clusters {
		want[c] = true
	}
	out := map[string]int{}
	for _, cs := range doc.GetClusterStatuses() {
		if len(want) > 0 && !want[cs.GetName()] {
			continue
		}
		for _, h := range cs.GetHostStatuses() {
			sa := h.GetAddress().GetSocketAddress()
			if sa == nil {
				continue // internal listener or pipe: not a backend
			}
			for _, m := range h.GetStats() {
				if m.GetName() == "rq_active" && m.GetValue() > 0 {
					addr := net.JoinHostPort(sa.GetAddress(), strconv.Itoa(int(sa.GetPortValue())))
					out[addr] += int(m.GetValue())
				}
			}
		}
	}
	return out, nil
}
