package harness

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// clusterPKI holds the file paths of the credentials a test cluster uses.
// Everything is generated per cluster and lives in its temp directory.
type clusterPKI struct {
	caCert, caKey           string // CA that signs the serving and client certs
	servingCert, servingKey string // kube-apiserver's serving cert (127.0.0.1, localhost)
	adminCert, adminKey     string // client cert CN=thaw-e2e-admin, O=system:masters
	saKey, saPub            string // RSA key pair that signs service-account tokens

	caPEM, adminCertPEM, adminKeyPEM []byte

	caCertObj *x509.Certificate
	caSigner  crypto.Signer
}

// newClusterPKI writes a CA, a serving cert, an admin client cert and a
// service-account key pair into dir.
func newClusterPKI(dir string) (*clusterPKI, error) {
	p := &clusterPKI{
		caCert: filepath.Join(dir, "ca.crt"), caKey: filepath.Join(dir, "ca.key"),
		servingCert: filepath.Join(dir, "apiserver.crt"), servingKey: filepath.Join(dir, "apiserver.key"),
		adminCert: filepath.Join(dir, "admin.crt"), adminKey: filepath.Join(dir, "admin.key"),
		saKey: filepath.Join(dir, "sa.key"), saPub: filepath.Join(dir, "sa.pub"),
	}
	now := time.Now()
	notAfter := now.Add(24 * time.Hour)

	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("ca key: %w", err)
	}
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "thaw-e2e-ca"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              notAfter,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, caKey.Public(), caKey)
	if err != nil {
		return nil, fmt.Errorf("ca cert: %w", err)
	}
	p.caCertObj, err = x509.ParseCertificate(caDER)
	if err != nil {
		return nil, fmt.Errorf("parse ca cert: %w", err)
	}
	p.caSigner = caKey
	p.caPEM = pemBlock("CERTIFICATE", caDER)
	if err := writePEMKey(p.caKey, caKey); err != nil {
		return nil, err
	}
	if err := os.WriteFile(p.caCert, p.caPEM, 0o600); err != nil {
		return nil, err
	}

	serving := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: "kube-apiserver"},
		DNSNames:     []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc"},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	if _, _, err := p.issue(serving, now, notAfter, p.servingCert, p.servingKey); err != nil {
		return nil, fmt.Errorf("serving cert: %w", err)
	}
	admin := &x509.Certificate{
		SerialNumber: big.NewInt(3),
		Subject:      pkix.Name{CommonName: "thaw-e2e-admin", Organization: []string{"system:masters"}},
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	p.adminCertPEM, p.adminKeyPEM, err = p.issue(admin, now, notAfter, p.adminCert, p.adminKey)
	if err != nil {
		return nil, fmt.Errorf("admin cert: %w", err)
	}

	saKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, fmt.Errorf("service-account key: %w", err)
	}
	if err := writePEMKey(p.saKey, saKey); err != nil {
		return nil, err
	}
	pubDER, err := x509.MarshalPKIXPublicKey(saKey.Public())
	if err != nil {
		return nil, fmt.Errorf("service-account public key: %w", err)
	}
	if err := os.WriteFile(p.saPub, pemBlock("PUBLIC KEY", pubDER), 0o600); err != nil {
		return nil, err
	}
	return p, nil
}

// issue signs tmpl with the CA using a fresh P-256 key and writes the cert
// and key files; it returns their PEM bytes.
func (p *clusterPKI) issue(tmpl *x509.Certificate, now, notAfter time.Time, certPath, keyPath string) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	tmpl.NotBefore = now.Add(-time.Hour)
	tmpl.NotAfter = notAfter
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.caCertObj, key.Public(), p.caSigner)
	if err != nil {
		return nil, nil, err
	}
	certPEM = pemBlock("CERTIFICATE", der)
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	keyPEM = pemBlock("PRIVATE KEY", keyDER)
	if err := os.WriteFile(certPath, certPEM, 0o600); err != nil {
		return nil, nil, err
	}
	if err := os.WriteFile(keyPath, keyPEM, 0o600); err != nil {
		return nil, nil, err
	}
	return certPEM, keyPEM, nil
}

func writePEMKey(path string, key crypto.Signer) error {
	var block []byte
	switch k := key.(type) {
	case *rsa.PrivateKey:
		// PKCS#1 "RSA PRIVATE KEY": every Kubernetes key loader accepts it.
		block = pemBlock("RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(k))
	default:
		der, err := x509.MarshalPKCS8PrivateKey(key)
		if err != nil {
			return fmt.Errorf("marshal key %s: %w", path, err)
		}
		block = pemBlock("PRIVATE KEY", der)
	}
	return os.WriteFile(path, block, 0o600)
}

func pemBlock(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}

// writeKubeconfig writes a kubeconfig for server that trusts caPEM and
// authenticates with the given client cert or, if token is set, a bearer
// token.
func writeKubeconfig(path, server string, caPEM, certPEM, keyPEM []byte, token string) error {
	b64 := base64.StdEncoding.EncodeToString
	user := fmt.Sprintf("    client-certificate-data: %s\n    client-key-data: %s\n", b64(certPEM), b64(keyPEM))
	if token != "" {
		user = fmt.Sprintf("    token: %s\n", token)
	}
	cfg := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: thaw-e2e
  cluster:
    server: %s
    certificate-authority-data: %s
users:
- name: thaw-e2e
  user:
%scontexts:
- name: thaw-e2e
  context:
    cluster: thaw-e2e
    user: thaw-e2e
current-context: thaw-e2e
`, server, b64(caPEM), user)
	return os.WriteFile(path, []byte(cfg), 0o600)
}
