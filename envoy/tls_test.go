package envoy

import (
	"errors"
	"strings"
	"testing"

	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"sigs.k8s.io/yaml"
)

var testTLS = ClientTLS{CertDir: "/etc/thaw-tls", SDSDir: "/etc/envoy", ServerName: "thaw-grpc.thaw-system.svc"}

func TestRenderBootstrapTLS(t *testing.T) {
	tc := testTLS
	y, err := RenderBootstrap(BootstrapParams{NodeID: "n", XDSAddress: "127.0.0.1:18000", TLS: &tc})
	if err != nil {
		t.Fatal(err)
	}
	j, err := yaml.YAMLToJSON(y)
	if err != nil {
		t.Fatal(err)
	}
	var b bootstrapv3.Bootstrap
	if err := protojson.Unmarshal(j, &b); err != nil {
		t.Fatal(err)
	}
	for _, c := range b.GetStaticResources().GetClusters() {
		var up tlsv3.UpstreamTlsContext
		if err := c.GetTransportSocket().GetTypedConfig().UnmarshalTo(&up); err != nil {
			t.Fatalf("cluster %s: no TLS transport socket: %v", c.GetName(), err)
		}
		ctx := up.GetCommonTlsContext()
		sds := ctx.GetTlsCertificateSdsSecretConfigs()
		if up.GetSni() != tc.ServerName || len(ctx.GetAlpnProtocols()) != 1 || ctx.GetAlpnProtocols()[0] != "h2" || len(sds) != 1 ||
			sds[0].GetSdsConfig().GetPathConfigSource().GetPath() != "/etc/envoy/"+ClientCertSDSFile ||
			sds[0].GetSdsConfig().GetPathConfigSource().GetWatchedDirectory().GetPath() != tc.CertDir ||
			ctx.GetValidationContextSdsSecretConfig().GetSdsConfig().GetPathConfigSource().GetPath() != "/etc/envoy/"+TrustSDSFile {
			t.Errorf("cluster %s: TLS context %v", c.GetName(), &up)
		}
	}
	if len(b.GetStaticResources().GetClusters()) != 3 {
		t.Errorf("%d clusters", len(b.GetStaticResources().GetClusters()))
	}

	plain, err := RenderBootstrap(BootstrapParams{NodeID: "n", XDSAddress: "127.0.0.1:18000"})
	if err != nil || strings.Contains(string(plain), "transport_socket") {
		t.Errorf("plaintext bootstrap has a transport socket (%v)", err)
	}
	for _, bad := range []ClientTLS{
		{CertDir: "relative", SDSDir: "/x", ServerName: "a"},
		{CertDir: "/x", SDSDir: "/x"},
		{CertDir: "/x\"", SDSDir: "/x", ServerName: "a"},
	} {
		if _, err := RenderBootstrap(BootstrapParams{NodeID: "n", XDSAddress: "127.0.0.1:1", TLS: &bad}); !errors.Is(err, ErrInvalidParams) {
			t.Errorf("TLS %+v: err %v, want ErrInvalidParams", bad, err)
		}
	}
}

func TestRenderSDS(t *testing.T) {
	files, err := RenderSDS(testTLS)
	if err != nil {
		t.Fatal(err)
	}
	get := func(name string) *tlsv3.Secret {
		t.Helper()
		j, err := yaml.YAMLToJSON(files[name])
		if err != nil {
			t.Fatal(err)
		}
		var resp discoveryv3.DiscoveryResponse
		if err := protojson.Unmarshal(j, &resp); err != nil {
			t.Fatal(err)
		}
		if len(resp.GetResources()) != 1 {
			t.Fatalf("%s: %d resources, want 1 (Envoy's file SDS takes exactly one)", name, len(resp.GetResources()))
		}
		var s tlsv3.Secret
		if err := resp.GetResources()[0].UnmarshalTo(&s); err != nil {
			t.Fatal(err)
		}
		return &s
	}
	cert := get(ClientCertSDSFile).GetTlsCertificate()
	if cert.GetCertificateChain().GetFilename() != "/etc/thaw-tls/tls.crt" || cert.GetPrivateKey().GetFilename() != "/etc/thaw-tls/tls.key" {
		t.Errorf("client cert secret %v", cert)
	}
	vc := get(TrustSDSFile).GetValidationContext()
	if vc.GetTrustedCa().GetFilename() != "/etc/thaw-tls/ca.crt" || vc.GetMatchTypedSubjectAltNames()[0].GetMatcher().GetExact() != testTLS.ServerName {
		t.Errorf("trust secret %v", vc)
	}
}
