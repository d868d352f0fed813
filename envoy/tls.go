package envoy

import (
	"fmt"
	"path"
	"strings"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/anypb"
	"sigs.k8s.io/yaml"
)

// Names of the SDS files RenderSDS returns, and of the secrets in them.
const (
	// ClientCertSDSFile holds Envoy's client certificate (tls.crt, tls.key).
	ClientCertSDSFile = "thaw-client-cert-sds.yaml"
	// TrustSDSFile holds the CA bundle (ca.crt) and the name thaw's
	// server certificate must carry.
	TrustSDSFile   = "thaw-trust-sds.yaml"
	clientCertName = "thaw_client_cert"
	trustName      = "thaw_trust"
)

// ClientTLS makes Envoy speak mutual TLS to thaw on the thaw_xds,
// thaw_extproc and thaw_stats clusters: it presents the certificate in
// CertDir and accepts only a server certificate signed by a CA of CertDir's
// bundle that names ServerName.
//
// Certificates are read through file-based SDS: the two files RenderSDS
// returns (placed in SDSDir) point at CertDir/tls.crt, tls.key and ca.crt,
// and Envoy watches CertDir for moves, which is how a Kubernetes Secret
// volume swaps its files. A renewed certificate is therefore picked up by
// new connections without a restart.
type ClientTLS struct {
	// CertDir holds tls.crt, tls.key and ca.crt (the layout of a
	// kubernetes.io/tls Secret with ca.crt, as `thaw certgen` and
	// cert-manager write it). Absolute path.
	CertDir string
	// SDSDir is where the files of RenderSDS live. Absolute path.
	SDSDir string
	// ServerName is the SNI Envoy sends and the DNS SAN it requires in
	// thaw's certificate (for example thaw-grpc.thaw-system.svc).
	ServerName string
}

func (c *ClientTLS) validate() error {
	var bad []string
	for name, p := range map[string]string{"cert dir": c.CertDir, "SDS dir": c.SDSDir} {
		if !path.IsAbs(p) || strings.ContainsAny(p, "\"\n\\") {
			bad = append(bad, fmt.Sprintf("%s %q: want an absolute path", name, p))
		}
	}
	if c.ServerName == "" || strings.ContainsAny(c.ServerName, "\"\n\\ ") {
		bad = append(bad, fmt.Sprintf("server name %q: want a DNS name", c.ServerName))
	}
	if len(bad) > 0 {
		return fmt.Errorf("%w: TLS: %s", ErrInvalidParams, strings.Join(bad, "; "))
	}
	return nil
}

// ClientCertSDSPath and TrustSDSPath are the SDS file paths the bootstrap
// refers to.
func (c *ClientTLS) ClientCertSDSPath() string { return path.Join(c.SDSDir, ClientCertSDSFile) }

// TrustSDSPath: see ClientCertSDSPath.
func (c *ClientTLS) TrustSDSPath() string { return path.Join(c.SDSDir, TrustSDSFile) }

// RenderSDS returns the two SDS files of c, keyed by file name
// (ClientCertSDSFile, TrustSDSFile): each a DiscoveryResponse in YAML with
// one validated Secret. Errors wrap ErrInvalidParams.
func RenderSDS(c ClientTLS) (map[string][]byte, error) {
	if err := c.validate(); err != nil {
		return nil, err
	}
	file := func(n string) *corev3.DataSource {
		return &corev3.DataSource{Specifier: &corev3.DataSource_Filename{Filename: path.Join(c.CertDir, n)}}
	}
	secrets := map[string]*tlsv3.Secret{
		ClientCertSDSFile: {Name: clientCertName, Type: &tlsv3.Secret_TlsCertificate{TlsCertificate: &tlsv3.TlsCertificate{
			CertificateChain: file("tls.crt"),
			PrivateKey:       file("tls.key"),
		}}},
		TrustSDSFile: {Name: trustName, Type: &tlsv3.Secret_ValidationContext{ValidationContext: &tlsv3.CertificateValidationContext{
			TrustedCa: file("ca.crt"),
			MatchTypedSubjectAltNames: []*tlsv3.SubjectAltNameMatcher{{
				SanType: tlsv3.SubjectAltNameMatcher_DNS,
				Matcher: &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_Exact{Exact: c.ServerName}},
			}},
		}}},
	}
	out := map[string][]byte{}
	for name, s := range secrets {
		if err := s.ValidateAll(); err != nil {
			return nil, fmt.Errorf("%w: SDS %s: %w", ErrInvalidParams, name, err)
		}
		a, err := anypb.New(s)
		if err != nil {
			return nil, fmt.Errorf("envoy: SDS %s: %w", name, err)
		}
		j, err := protojson.MarshalOptions{UseProtoNames: true}.Marshal(&discoveryv3.DiscoveryResponse{Resources: []*anypb.Any{a}})
		if err != nil {
			return nil, fmt.Errorf("envoy: SDS %s: %w", name, err)
		}
		y, err := yaml.JSONToYAML(j)
		if err != nil {
			return nil, fmt.Errorf("envoy: SDS %s: %w", name, err)
		}
		out[name] = y
	}
	return out, nil
}
