package certgen

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"math/big"
	"net"
	"slices"
	"time"

	"k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/keyutil"
)

// Default validity periods. The CA lives 10 years from its creation on the
// real clock (what k8s.io/client-go/util/cert gives a self-signed CA);
// leaves are renewed
// by running Ensure again (the CronJob in manifests/) once less than
// RenewBefore is left.
const (
	DefaultValidity    = 365 * 24 * time.Hour
	DefaultRenewBefore = 30 * 24 * time.Hour
	// DefaultClientCommonName is the subject CN of the Envoy fleet's
	// client certificate.
	DefaultClientCommonName = "thaw-envoy"
	caCommonName            = "thaw-ca"
	serverCommonName        = "thaw"
	// clockSkew back-dates NotBefore so a peer whose clock is a little
	// behind accepts a fresh certificate.
	clockSkew = 5 * time.Minute
)

// ErrInvalid is wrapped by errors about bad options.
var ErrInvalid = errors.New("certgen")

// KeyPair is one Secret's worth of PEM data.
type KeyPair struct {
	// Cert is the certificate (tls.crt), Key its private key (tls.key).
	Cert, Key []byte
	// CA is the trust bundle (ca.crt): the CA certificates the holder
	// accepts from its peer (the current CA, plus the previous one while
	// it is still valid after a CA renewal).
	CA []byte
}

// Set is every certificate of thaw's mutual TLS. A zero KeyPair means
// "absent".
type Set struct {
	// CA holds the CA certificate and key (only certgen reads it).
	CA KeyPair
	// Server is thaw's serving certificate (ExtKeyUsage serverAuth).
	Server KeyPair
	// Envoy is the Envoy fleet's client certificate (clientAuth).
	Envoy KeyPair
}

// Options says what the certificates must contain.
type Options struct {
	// ServerDNSNames and ServerIPs are the server certificate's SANs; at
	// least one is required. Envoy checks the name it is configured with
	// (the bootstrap's SNI) against them.
	ServerDNSNames []string
	ServerIPs      []net.IP
	// ClientCommonName is the Envoy certificate's subject CN (default
	// DefaultClientCommonName).
	ClientCommonName string
	// Validity of the leaf certificates (default DefaultValidity).
	Validity time.Duration
	// RenewBefore: a leaf (or the CA) with less than this left is renewed
	// (default DefaultRenewBefore).
	RenewBefore time.Duration
}

func (o *Options) defaults() error {
	if o.ClientCommonName == "" {
		o.ClientCommonName = DefaultClientCommonName
	}
	if o.Validity == 0 {
		o.Validity = DefaultValidity
	}
	if o.RenewBefore == 0 {
		o.RenewBefore = DefaultRenewBefore
	}
	if len(o.ServerDNSNames) == 0 && len(o.ServerIPs) == 0 {
		return fmt.Errorf("%w: the server certificate needs at least one DNS name or IP", ErrInvalid)
	}
	if o.Validity <= o.RenewBefore || o.RenewBefore < 0 {
		return fmt.Errorf("%w: validity %v must exceed renew-before %v (and both be positive)", ErrInvalid, o.Validity, o.RenewBefore)
	}
	return nil
}

// Ensure returns the set to store given the existing one (zero KeyPairs
// where nothing is stored yet) and the names of the parts that changed
// ("ca", "server", "envoy"); nothing changed means nothing to write, so
// running it again is harmless. It keeps every part that is still good and
// makes:
//
//   - a new CA when there is none, it cannot be parsed, or less than
//     RenewBefore is left; the previous CA stays in the trust bundles
//     while it is valid, so peers holding a certificate it signed keep
//     working until they get their new one;
//   - a new leaf when it is absent, unparsable, not signed by the current
//     CA, due for renewal, or (server) its SANs differ from the options;
//   - a new trust bundle (ca.crt) wherever it differs from the wanted one.
func Ensure(existing Set, opts Options, now time.Time) (Set, []string, error) {
	if err := opts.defaults(); err != nil {
		return Set{}, nil, err
	}
	out := existing
	var changed []string
	caCert, caKey, ok := parseCA(existing.CA, now, opts.RenewBefore)
	var bundle []byte
	if ok {
		bundle = trustBundle(caCert, existing.CA.CA, now)
		if !bytes.Equal(bundle, existing.CA.CA) {
			out.CA.CA = bundle
			changed = append(changed, "ca")
		}
	} else {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return Set{}, nil, fmt.Errorf("certgen: CA key: %w", err)
		}
		caCert, err = cert.NewSelfSignedCACert(cert.Config{CommonName: caCommonName, NotBefore: now.Add(-clockSkew)}, key)
		if err != nil {
			return Set{}, nil, fmt.Errorf("certgen: CA certificate: %w", err)
		}
		caKey = key
		certPEM, keyPEM, err := encode(caCert, key)
		if err != nil {
			return Set{}, nil, err
		}
		bundle = trustBundle(caCert, existing.CA.Cert, now)
		out.CA = KeyPair{Cert: certPEM, Key: keyPEM, CA: bundle}
		changed = append(changed, "ca")
	}
	pool, err := cert.NewPoolFromBytes(caPEMOf(caCert))
	if err != nil {
		return Set{}, nil, fmt.Errorf("certgen: CA pool: %w", err)
	}
	leaves := []struct {
		name string
		kp   *KeyPair
		tmpl *x509.Certificate
	}{
		{"server", &out.Server, &x509.Certificate{
			Subject: pkix.Name{CommonName: serverCommonName}, DNSNames: opts.ServerDNSNames, IPAddresses: opts.ServerIPs,
			ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}},
		{"envoy", &out.Envoy, &x509.Certificate{
			Subject:     pkix.Name{CommonName: opts.ClientCommonName},
			ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}},
	}
	for _, l := range leaves {
		if leafGood(*l.kp, l.tmpl, pool, now, opts.RenewBefore) {
			if !bytes.Equal(l.kp.CA, bundle) {
				l.kp.CA = bundle
				changed = append(changed, l.name)
			}
			continue
		}
		kp, err := sign(l.tmpl, caCert, caKey, now, opts.Validity)
		if err != nil {
			return Set{}, nil, fmt.Errorf("certgen: %s certificate: %w", l.name, err)
		}
		kp.CA = bundle
		*l.kp = kp
		changed = append(changed, l.name)
	}
	return out, changed, nil
}

// parseCA returns the stored CA when it is usable for at least renewBefore.
func parseCA(kp KeyPair, now time.Time, renewBefore time.Duration) (*x509.Certificate, crypto.Signer, bool) {
	certs, err := cert.ParseCertsPEM(kp.Cert)
	if err != nil || !certs[0].IsCA || now.Add(renewBefore).After(certs[0].NotAfter) {
		return nil, nil, false
	}
	k, err := keyutil.ParsePrivateKeyPEM(kp.Key)
	if err != nil {
		return nil, nil, false
	}
	signer, ok := k.(crypto.Signer)
	if !ok || !publicKeyMatches(certs[0], signer) {
		return nil, nil, false
	}
	return certs[0], signer, true
}

func publicKeyMatches(c *x509.Certificate, s crypto.Signer) bool {
	pub, ok := s.Public().(interface{ Equal(crypto.PublicKey) bool })
	return ok && pub.Equal(c.PublicKey)
}

// leafGood reports whether kp holds a certificate signed by pool's CA, with
// its key, the wanted SANs and usage, valid for at least renewBefore.
func leafGood(kp KeyPair, want *x509.Certificate, pool *x509.CertPool, now time.Time, renewBefore time.Duration) bool {
	certs, err := cert.ParseCertsPEM(kp.Cert)
	if err != nil {
		return false
	}
	c := certs[0]
	k, err := keyutil.ParsePrivateKeyPEM(kp.Key)
	if err != nil {
		return false
	}
	signer, ok := k.(crypto.Signer)
	if !ok || !publicKeyMatches(c, signer) || now.Add(renewBefore).After(c.NotAfter) {
		return false
	}
	if _, err := c.Verify(x509.VerifyOptions{Roots: pool, CurrentTime: now, KeyUsages: want.ExtKeyUsage}); err != nil {
		return false
	}
	return c.Subject.CommonName == want.Subject.CommonName && slices.Equal(c.DNSNames, want.DNSNames) &&
		slices.EqualFunc(c.IPAddresses, want.IPAddresses, func(a, b net.IP) bool { return a.Equal(b) })
}

// sign issues a leaf from tmpl (subject, SANs, usage) with a new P-256 key.
func sign(tmpl *x509.Certificate, ca *x509.Certificate, caKey crypto.Signer, now time.Time, validity time.Duration) (KeyPair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return KeyPair{}, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return KeyPair{}, err
	}
	t := *tmpl
	t.SerialNumber = serial.Add(serial, big.NewInt(1))
	t.NotBefore, t.NotAfter = now.Add(-clockSkew), now.Add(validity)
	t.KeyUsage = x509.KeyUsageDigitalSignature
	t.BasicConstraintsValid = true
	der, err := x509.CreateCertificate(rand.Reader, &t, ca, key.Public(), caKey)
	if err != nil {
		return KeyPair{}, err
	}
	c, err := x509.ParseCertificate(der)
	if err != nil {
		return KeyPair{}, err
	}
	certPEM, keyPEM, err := encode(c, key)
	return KeyPair{Cert: certPEM, Key: keyPEM}, err
}

func encode(c *x509.Certificate, key crypto.PrivateKey) (certPEM, keyPEM []byte, err error) {
	if certPEM, err = cert.EncodeCertificates(c); err != nil {
		return nil, nil, fmt.Errorf("certgen: encode certificate: %w", err)
	}
	if keyPEM, err = keyutil.MarshalPrivateKeyToPEM(key); err != nil {
		return nil, nil, fmt.Errorf("certgen: encode key: %w", err)
	}
	return certPEM, keyPEM, nil
}

// trustBundle returns the PEM bundle of current followed by the
// certificates of previous that are other CAs still valid at now (the CA
// being replaced during a rotation).
func trustBundle(current *x509.Certificate, previous []byte, now time.Time) []byte {
	out := caPEMOf(current)
	old, err := cert.ParseCertsPEM(previous)
	if err != nil {
		return out
	}
	for _, c := range old {
		if c.IsCA && !c.Equal(current) && now.Before(c.NotAfter) {
			out = append(out, caPEMOf(c)...)
		}
	}
	return out
}

func caPEMOf(c *x509.Certificate) []byte {
	b, _ := cert.EncodeCertificates(c) // cannot fail for a parsed certificate
	return b
}
