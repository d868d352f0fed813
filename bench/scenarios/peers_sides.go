package main

import (
	"net/http"
	"time"

	"github.com/thaw-dev/thaw/e2e/harness"
	vegeta "github.com/tsenart/vegeta/v12/lib"
)

// peerSide is one way of reaching the backend in the peers scenario, with
// the proxy processes whose CPU it is charged.
type peerSide struct {
	name, description string
	t                 *target
	procs             []namedPid
	failed            string
}

// namedPid is a process whose CPU a side is charged.
type namedPid struct {
	name string
	pid  int
}

// interleavedRate sends rate requests/s in all for d in one vegeta attack
// whose targeter cycles through ts request by request (rate/len(ts) per
// target), so every side meets the same moment-to-moment conditions of the
// machine. Results are told apart by URL and added to ss[i] when ss is not
// nil (nil: warm-up).
func interleavedRate(ts []*target, rate int, d time.Duration, ss []*sample) {
	vts := make([]vegeta.Target, len(ts))
	byURL := make(map[string]int, len(ts))
	for i, t := range ts {
		vts[i] = vegeta.Target{Method: http.MethodGet, URL: t.url, Header: http.Header{"Host": []string{t.host}}}
		byURL[t.url] = i
	}
	atk := ts[0].attacker(vegeta.Workers(uint64(max(rate/25, 10))))
	var m vegeta.Metrics
	for r := range atk.Attack(vegeta.NewStaticTargeter(vts...), vegeta.Rate{Freq: rate, Per: time.Second}, d, "peers") {
		m.Add(r)
		if i, ok := byURL[r.URL]; ok && ss != nil {
			ss[i].add(r)
		}
	}
	m.Close()
	for _, s := range ss {
		s.sentSpan += m.Duration
	}
}

// frontRoute is one virtual host of the peers' front Envoy.
type frontRoute struct {
	host, cluster string
	port          int
}

// frontBootstrap is the plain Envoy in front of every peer, as Knative and
// KEDA deploy them behind an ingress: listener "peers_http" (port chosen by
// Envoy) routing by Host to one static cluster per route, with the static
// baseline's circuit-breaker limits.
func frontBootstrap(routes []frontRoute) string {
	var vhosts, clusters []string
	for _, r := range routes {
		vhosts = append(vhosts, harness.VirtualHost(r.cluster, []string{r.host}, "match: {prefix: \"/\"}\nroute: {cluster: "+r.cluster+"}"))
		clusters = append(clusters, harness.StaticCluster(r.cluster, r.port)+"\n"+benchCircuitBreakers)
	}
	return harness.StaticBootstrap{
		Listeners: []harness.HTTPListener{{Name: "peers_http", RouteConfigName: "peers", VirtualHosts: vhosts}},
		Clusters:  clusters,
		Tail:      adminAnyPort,
	}.String()
}
