package certgen

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"slices"
	"testing"
	"time"

	"k8s.io/client-go/util/cert"
)

var t0 = time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)

func testOptions() Options {
	return Options{ServerDNSNames: []string{"thaw-grpc.thaw-system.svc"}, ServerIPs: []net.IP{net.ParseIP("127.0.0.1")}}
}

// verifyLeaf checks kp's certificate against the trust bundle trust for
// the given usage and returns it.
func verifyLeaf(t *testing.T, kp KeyPair, trust []byte, usage x509.ExtKeyUsage, now time.Time) *x509.Certificate {
	t.Helper()
	if _, err := tls.X509KeyPair(kp.Cert, kp.Key); err != nil {
		t.Fatalf("key pair: %v", err)
	}
	certs, err := cert.ParseCertsPEM(kp.Cert)
	if err != nil {
		t.Fatal(err)
	}
	pool, err := cert.NewPoolFromBytes(trust)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := certs[0].Verify(x509.VerifyOptions{Roots: pool, CurrentTime: now, KeyUsages: []x509.ExtKeyUsage{usage}}); err != nil {
		t.Fatalf("verify %s: %v", certs[0].Subject.CommonName, err)
	}
	return certs[0]
}

func TestEnsureFromNothingThenIdempotent(t *testing.T) {
	s, changed, err := Ensure(Set{}, testOptions(), t0)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(changed, []string{"ca", "server", "envoy"}) {
		t.Errorf("changed %v, want ca, server, envoy", changed)
	}
	srv := verifyLeaf(t, s.Server, s.Envoy.CA, x509.ExtKeyUsageServerAuth, t0)
	if !slices.Equal(srv.DNSNames, []string{"thaw-grpc.thaw-system.svc"}) || len(srv.IPAddresses) != 1 {
		t.Errorf("server SANs %v %v", srv.DNSNames, srv.IPAddresses)
	}
	cl := verifyLeaf(t, s.Envoy, s.Server.CA, x509.ExtKeyUsageClientAuth, t0)
	if cl.Subject.CommonName != DefaultClientCommonName {
		t.Errorf("client CN %q", cl.Subject.CommonName)
	}
	// Neither leaf can act in the other's role.
	pool, _ := cert.NewPoolFromBytes(s.CA.Cert)
	if _, err := cl.Verify(x509.VerifyOptions{Roots: pool, CurrentTime: t0, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err == nil {
		t.Error("client certificate verifies as a server certificate")
	}
	if _, err := srv.Verify(x509.VerifyOptions{Roots: pool, CurrentTime: t0, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err == nil {
		t.Error("server certificate verifies as a client certificate")
	}

	again, changed, err := Ensure(s, testOptions(), t0.Add(time.Hour))
	if err != nil || len(changed) != 0 {
		t.Fatalf("second run changed %v (%v), want nothing", changed, err)
	}
	if !slices.Equal(again.Server.Cert, s.Server.Cert) || !slices.Equal(again.CA.Key, s.CA.Key) {
		t.Error("second run rewrote certificates")
	}
}

func TestEnsureRenews(t *testing.T) {
	opts := testOptions()
	s, _, err := Ensure(Set{}, opts, t0)
	if err != nil {
		t.Fatal(err)
	}
	t.Run("server SANs changed", func(t *testing.T) {
		o := opts
		o.ServerDNSNames = append(slices.Clone(o.ServerDNSNames), "thaw.example")
		next, changed, err := Ensure(s, o, t0)
		if err != nil || !slices.Equal(changed, []string{"server"}) {
			t.Fatalf("changed %v (%v), want server only", changed, err)
		}
		if got := verifyLeaf(t, next.Server, next.Envoy.CA, x509.ExtKeyUsageServerAuth, t0); !slices.Contains(got.DNSNames, "thaw.example") {
			t.Errorf("SANs %v", got.DNSNames)
		}
	})
	t.Run("leaves due for renewal", func(t *testing.T) {
		later := t0.Add(DefaultValidity - DefaultRenewBefore + time.Hour)
		next, changed, err := Ensure(s, opts, later)
		if err != nil || !slices.Equal(changed, []string{"server", "envoy"}) {
			t.Fatalf("changed %v (%v), want server and envoy", changed, err)
		}
		verifyLeaf(t, next.Server, next.Envoy.CA, x509.ExtKeyUsageServerAuth, later)
		if !slices.Equal(next.CA.Cert, s.CA.Cert) {
			t.Error("CA replaced with years left")
		}
	})
	t.Run("CA due for renewal keeps the old CA trusted", func(t *testing.T) {
		old, _ := cert.ParseCertsPEM(s.CA.Cert)
		later := old[0].NotAfter.Add(-DefaultRenewBefore / 2)
		// Leaves renewed 10 days earlier (30-day leaves, renewed a day
		// before expiry), so they are still valid when the CA rotates.
		short := opts
		short.Validity, short.RenewBefore = 30*24*time.Hour, 24*time.Hour
		s, changed, err := Ensure(s, short, later.Add(-10*24*time.Hour))
		if err != nil || !slices.Equal(changed, []string{"server", "envoy"}) {
			t.Fatalf("leaf renewal before the CA rotation changed %v (%v)", changed, err)
		}
		next, changed, err := Ensure(s, opts, later)
		if err != nil || !slices.Equal(changed, []string{"ca", "server", "envoy"}) {
			t.Fatalf("changed %v (%v), want everything", changed, err)
		}
		bundle, err := cert.ParseCertsPEM(next.Server.CA)
		if err != nil || len(bundle) != 2 || !bundle[1].Equal(old[0]) {
			t.Fatalf("trust bundle %d certs (%v), want the new CA then the old one", len(bundle), err)
		}
		// A peer still holding an old-CA leaf is accepted with the new bundle.
		verifyLeaf(t, s.Envoy, next.Server.CA, x509.ExtKeyUsageClientAuth, later)
		verifyLeaf(t, next.Envoy, next.Server.CA, x509.ExtKeyUsageClientAuth, later)
		// Once the old CA expired, the bundle drops it.
		after := old[0].NotAfter.Add(time.Hour)
		final, changed, err := Ensure(next, opts, after)
		if err != nil || !slices.Contains(changed, "ca") {
			t.Fatalf("changed %v (%v), want the bundle rewritten", changed, err)
		}
		if b, _ := cert.ParseCertsPEM(final.Envoy.CA); len(b) != 1 {
			t.Errorf("bundle after the old CA expired has %d certs, want 1", len(b))
		}
	})
	t.Run("garbage is replaced", func(t *testing.T) {
		bad := s
		bad.Envoy.Key = []byte("not a key")
		_, changed, err := Ensure(bad, opts, t0)
		if err != nil || !slices.Equal(changed, []string{"envoy"}) {
			t.Fatalf("changed %v (%v), want envoy", changed, err)
		}
	})
}

func TestEnsureRefusesBadOptions(t *testing.T) {
	for name, o := range map[string]Options{
		"no SANs":                 {},
		"renew before > validity": {ServerDNSNames: []string{"a"}, Validity: time.Hour, RenewBefore: 2 * time.Hour},
	} {
		if _, _, err := Ensure(Set{}, o, t0); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: err %v, want ErrInvalid", name, err)
		}
	}
}

func TestDirStoreRoundTrip(t *testing.T) {
	st := &DirStore{Dir: t.TempDir(), Names: DefaultNames()}
	changed, err := Run(context.Background(), st, testOptions(), t0)
	if err != nil || len(changed) != 3 {
		t.Fatalf("first run: %v %v", changed, err)
	}
	changed, err = Run(context.Background(), st, testOptions(), t0)
	if err != nil || len(changed) != 0 {
		t.Fatalf("second run changed %v (%v), want nothing", changed, err)
	}
	s, err := st.Load(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	verifyLeaf(t, s.Envoy, s.Server.CA, x509.ExtKeyUsageClientAuth, t0)
}
