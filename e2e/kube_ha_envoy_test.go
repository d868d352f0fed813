//go:build e2e

package e2e

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"
	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	caresv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/network/dns_resolver/cares/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	metricsv3 "github.com/envoyproxy/go-control-plane/envoy/service/metrics/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/anypb"
	"sigs.k8s.io/yaml"

	"github.com/thaw-dev/thaw/e2e/harness"
	"github.com/thaw-dev/thaw/envoy"
	"github.com/thaw-dev/thaw/platform/kube"
)

// TestKubeEnvoyFollowsLeader checks the HA wiring of manifests/ with real
// Envoy: the fleet bootstrap from kube.FleetBootstrap (STRICT_DNS on one
// name resolving to every thaw replica, gRPC health checks) makes Envoy open
// its ADS and stats streams to the replica whose health is SERVING (the
// leader), and kube.StreamGate on the replica that lost leadership ends
// them so Envoy reopens them on the new leader. A tiny DNS server stands in
// for the headless Service; two gRPC servers on 127.0.0.31 and 127.0.0.32
// stand in for the replicas.
func TestKubeEnvoyFollowsLeader(t *testing.T) {
	port := harness.PickPort(t)
	ips := []string{"127.0.0.31", "127.0.0.32"}
	dnsAddr := startDNS(t, "thaw-grpc.test.", ips)
	// Mutual TLS as in manifests/: the replicas serve certgen's server
	// certificate, Envoy presents its client certificate (health checks
	// included).
	creds, envoyTLS := testMutualTLS(t)
	replicas := make([]*fakeReplica, len(ips))
	for i, ip := range ips {
		replicas[i] = startFakeReplica(t, net.JoinHostPort(ip, fmt.Sprint(port)), i == 0, creds)
	}
	bs, err := kube.FleetBootstrap(envoy.BootstrapParams{NodeID: "envoy-ha", XDSAddress: fmt.Sprintf("thaw-grpc.test:%d", port),
		TLS: envoyTLS})
	if err != nil {
		t.Fatal(err)
	}
	bs = withTestResolver(t, bs, dnsAddr)
	e := harness.StartEnvoy(t, harness.EnvoyOptions{Bootstrap: string(bs), SkipWaitReady: true})

	waitStreams := func(what string, want ...int32) time.Duration {
		t.Helper()
		start := time.Now()
		err := pollFor(t, func() bool {
			for i, r := range replicas {
				if r.ads.Load() != want[i] || r.stats.Load() != want[i] {
					return false
				}
			}
			return true
		})
		if err != nil {
			clusters, _, _ := e.Admin(context.Background(), "/clusters")
			t.Fatalf("%s: ADS streams %d/%d, stats streams %d/%d, want %v on each; envoy /clusters:\n%s", what,
				replicas[0].ads.Load(), replicas[1].ads.Load(), replicas[0].stats.Load(), replicas[1].stats.Load(),
				want, grepLines(clusters, "health_flags"))
		}
		return time.Since(start)
	}
	waitStreams("ADS on the first leader", 1, 0)

	for round, leader := range []int{1, 0} {
		for i, r := range replicas {
			r.setLeading(i == leader)
		}
		want := []int32{0, 0}
		want[leader] = 1
		took := waitStreams(fmt.Sprintf("round %d: ADS moved to replica %d", round, leader), want...)
		t.Logf("leadership moved to %s: Envoy's ADS and stats streams followed in %v (health check interval %v, handover delay %v)",
			ips[leader], took.Round(time.Millisecond), kube.HealthCheckInterval, kube.DefaultHandoverDelay)
	}
	clusters, _, err := e.Admin(context.Background(), "/clusters")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(clusters, "thaw_xds::"+net.JoinHostPort(ips[1], fmt.Sprint(port))+"::health_flags::/failed_active_hc") {
		t.Errorf("follower %s not marked failed_active_hc:\n%s", ips[1], grepLines(clusters, "health_flags"))
	}
}

// fakeReplica is a gRPC server with grpc.health.v1, kube.StreamGate, and
// ADS and MetricsService endpoints that only count open streams (and only
// read: the gate must end them without their help).
type fakeReplica struct {
	discoveryv3.UnimplementedAggregatedDiscoveryServiceServer
	metricsv3.UnimplementedMetricsServiceServer
	health *health.Server
	gate   *kube.StreamGate
	ads    atomic.Int32
	stats  atomic.Int32
}

func startFakeReplica(t *testing.T, addr string, leading bool, creds grpc.ServerOption) *fakeReplica {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("listen %s: %v", addr, err)
	}
	r := &fakeReplica{health: health.NewServer(), gate: kube.NewStreamGate(nil, 0)}
	r.setLeading(leading)
	s := grpc.NewServer(grpc.StreamInterceptor(r.gate.StreamInterceptor()), creds)
	healthpb.RegisterHealthServer(s, r.health)
	discoveryv3.RegisterAggregatedDiscoveryServiceServer(s, r)
	metricsv3.RegisterMetricsServiceServer(s, r)
	go func() { _ = s.Serve(ln) }()
	t.Cleanup(s.Stop)
	return r
}

func (r *fakeReplica) setLeading(leading bool) {
	st := healthpb.HealthCheckResponse_NOT_SERVING
	if leading {
		st = healthpb.HealthCheckResponse_SERVING
	}
	r.health.SetServingStatus(kube.LeaderHealthService, st)
	r.gate.SetLeader(leading)
}

// StreamMetrics reads Envoy's stats until the stream ends.
func (r *fakeReplica) StreamMetrics(s metricsv3.MetricsService_StreamMetricsServer) error {
	r.stats.Add(1)
	defer r.stats.Add(-1)
	for {
		if _, err := s.Recv(); err != nil {
			return nil
		}
	}
}

// DeltaAggregatedResources holds the stream open, answering nothing, until
// Envoy closes it.
func (r *fakeReplica) DeltaAggregatedResources(s discoveryv3.AggregatedDiscoveryService_DeltaAggregatedResourcesServer) error {
	r.ads.Add(1)
	defer r.ads.Add(-1)
	for {
		if _, err := s.Recv(); err != nil {
			return nil
		}
	}
}

// withTestResolver points the bootstrap's STRICT_DNS clusters at the test
// DNS server (c-ares, IPv4 only).
func withTestResolver(t *testing.T, bs []byte, dnsAddr netip.AddrPort) []byte {
	t.Helper()
	j, err := yaml.YAMLToJSON(bs)
	if err != nil {
		t.Fatal(err)
	}
	var b bootstrapv3.Bootstrap
	if err := protojson.Unmarshal(j, &b); err != nil {
		t.Fatal(err)
	}
	cares, err := anypb.New(&caresv3.CaresDnsResolverConfig{
		Resolvers: []*corev3.Address{{Address: &corev3.Address_SocketAddress{SocketAddress: &corev3.SocketAddress{
			Address: dnsAddr.Addr().String(), PortSpecifier: &corev3.SocketAddress_PortValue{PortValue: uint32(dnsAddr.Port())},
		}}}},
		DnsResolverOptions: &corev3.DnsResolverOptions{NoDefaultSearchDomain: true},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range b.GetStaticResources().GetClusters() {
		if c.GetType() != clusterv3.Cluster_STRICT_DNS {
			continue
		}
		c.TypedDnsResolverConfig = &corev3.TypedExtensionConfig{Name: "envoy.network.dns_resolver.cares", TypedConfig: cares}
		c.DnsLookupFamily = clusterv3.Cluster_V4_ONLY
	}
	if err := b.ValidateAll(); err != nil {
		t.Fatal(err)
	}
	out, err := protojson.Marshal(&b)
	if err != nil {
		t.Fatal(err)
	}
	return out // JSON is YAML
}

// startDNS serves A records for name (every ip, TTL 1 s) on a UDP port of
// 127.0.0.1; other names get NXDOMAIN, other types an empty answer.
func startDNS(t *testing.T, name string, ips []string) netip.AddrPort {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pc.Close() })
	go func() {
		buf := make([]byte, 512)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			if resp, err := dnsAnswer(buf[:n], name, ips); err == nil {
				_, _ = pc.WriteTo(resp, from)
			}
		}
	}()
	return pc.LocalAddr().(*net.UDPAddr).AddrPort()
}

// dnsAnswer builds the response to one DNS query (RFC 1035 wire format).
func dnsAnswer(q []byte, name string, ips []string) ([]byte, error) {
	if len(q) < 12 || binary.BigEndian.Uint16(q[4:]) != 1 {
		return nil, errors.New("want one question")
	}
	var labels []string
	i := 12
	for i < len(q) && q[i] != 0 {
		l := int(q[i])
		if i+1+l > len(q) {
			return nil, errors.New("bad name")
		}
		labels = append(labels, string(q[i+1:i+1+l]))
		i += 1 + l
	}
	if i+5 > len(q) {
		return nil, errors.New("short question")
	}
	question := q[12 : i+5]
	qtype := binary.BigEndian.Uint16(q[i+1:])
	resp := make([]byte, 12, 512)
	copy(resp, q[:2])
	flags := uint16(0x8180) // response, recursion desired and available
	var answers []string
	switch {
	case !strings.EqualFold(strings.Join(labels, ".")+".", name):
		flags |= 3 // NXDOMAIN
	case qtype == 1:
		answers = ips
	}
	binary.BigEndian.PutUint16(resp[2:], flags)
	binary.BigEndian.PutUint16(resp[4:], 1)
	binary.BigEndian.PutUint16(resp[6:], uint16(len(answers)))
	resp = append(resp, question...)
	for _, ip := range answers {
		a := netip.MustParseAddr(ip).As4()
		resp = append(resp, 0xc0, 12, 0, 1, 0, 1, 0, 0, 0, 1, 0, 4)
		resp = append(resp, a[:]...)
	}
	return resp, nil
}

// grepLines returns the lines of s containing sub.
func grepLines(s, sub string) string {
	var out []string
	for l := range strings.SplitSeq(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
