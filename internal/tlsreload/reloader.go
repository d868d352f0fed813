package tlsreload

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
	"k8s.io/utils/clock"
)

// DefaultCheckInterval is the least time between two reads of the files:
// at most one check per interval, made by the handshake that finds the
// last check older than that, so a flood of handshakes costs no file I/O.
const DefaultCheckInterval = time.Second

// ErrInvalidFiles is wrapped by every error about unreadable or unusable
// certificate files.
var ErrInvalidFiles = errors.New("invalid TLS files")

// Files names the PEM files of a mutual TLS server.
type Files struct {
	// CertFile is the server certificate chain (leaf first).
	CertFile string
	// KeyFile is the server certificate's private key.
	KeyFile string
	// ClientCAFile holds the CA certificates that sign accepted client
	// certificates (a bundle: several CAs are trusted during a CA
	// rotation).
	ClientCAFile string
}

// Options configures a Reloader.
type Options struct {
	Files  Files
	Logger *zap.Logger
	// CheckInterval is the least time between two reads of the files
	// (default DefaultCheckInterval; negative: check on every handshake,
	// for tests).
	CheckInterval time.Duration
	// Clock defaults to the real clock.
	Clock clock.PassiveClock
}

// Reloader holds the current server TLS configuration built from Files and
// rebuilds it when the files' contents change. Safe for concurrent use.
type Reloader struct {
	files    Files
	log      *zap.Logger
	interval time.Duration
	clock    clock.PassiveClock

	mu        sync.Mutex // serialises checks; never held during a handshake
	lastCheck time.Time
	loaded    [3][]byte // contents behind cur: cert, key, client CA

	cur      atomic.Pointer[tls.Config]
	reloads  atomic.Uint64
	failures atomic.Uint64
}

// New reads and checks the files once and returns a Reloader serving them.
// Errors wrap ErrInvalidFiles: a missing file, a key that does not match
// the certificate, or a CA file without any certificate.
func New(opts Options) (*Reloader, error) {
	f := opts.Files
	if f.CertFile == "" || f.KeyFile == "" || f.ClientCAFile == "" {
		return nil, fmt.Errorf("%w: certificate, key and client CA files are all required (got %q, %q, %q)",
			ErrInvalidFiles, f.CertFile, f.KeyFile, f.ClientCAFile)
	}
	r := &Reloader{files: f, log: opts.Logger, interval: opts.CheckInterval, clock: opts.Clock}
	if r.log == nil {
		r.log = zap.NewNop()
	}
	if r.interval == 0 {
		r.interval = DefaultCheckInterval
	}
	if r.clock == nil {
		r.clock = clock.RealClock{}
	}
	raw, err := r.read()
	if err != nil {
		return nil, err
	}
	cfg, err := build(raw)
	if err != nil {
		return nil, err
	}
	r.loaded, r.lastCheck = raw, r.clock.Now()
	r.cur.Store(cfg)
	return r, nil
}

// ServerConfig returns the tls.Config to serve with: every handshake takes
// the current configuration (GetConfigForClient), which requires a client
// certificate signed by a CA of ClientCAFile, TLS 1.2 or later, and ALPN
// "h2" (gRPC over TLS).
func (r *Reloader) ServerConfig() *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		NextProtos: []string{"h2"},
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
			r.maybeReload()
			return r.cur.Load(), nil
		},
	}
}

// Reloads returns how many times the files were reloaded after New (for
// tests and logs).
func (r *Reloader) Reloads() uint64 { return r.reloads.Load() }

// maybeReload re-reads the files when the last check is older than the
// interval and swaps the configuration when their contents changed and
// still make a valid configuration. A bad or half-written set of files is
// logged and the previous configuration stays (the next check retries).
func (r *Reloader) maybeReload() {
	if !r.mu.TryLock() {
		return // another handshake is checking; use the current config
	}
	defer r.mu.Unlock()
	now := r.clock.Now()
	if r.interval > 0 && now.Sub(r.lastCheck) < r.interval {
		return
	}
	r.lastCheck = now
	raw, err := r.read()
	if err == nil && bytes.Equal(raw[0], r.loaded[0]) && bytes.Equal(raw[1], r.loaded[1]) && bytes.Equal(raw[2], r.loaded[2]) {
		return
	}
	var cfg *tls.Config
	if err == nil {
		cfg, err = build(raw)
	}
	if err != nil {
		r.log.Warn("TLS files changed but cannot be used; keeping the previous certificates", zap.Error(err))
		return
	}
	r.loaded = raw
	r.cur.Store(cfg)
	r.reloads.Add(1)
	r.log.Info("TLS certificates reloaded", zap.String("cert", r.files.CertFile),
		zap.Time("notAfter", cfg.Certificates[0].Leaf.NotAfter))
}

func (r *Reloader) read() ([3][]byte, error) {
	var raw [3][]byte
	for i, p := range []string{r.files.CertFile, r.files.KeyFile, r.files.ClientCAFile} {
		b, err := os.ReadFile(p)
		if err != nil {
			return raw, fmt.Errorf("%w: %w", ErrInvalidFiles, err)
		}
		raw[i] = b
	}
	return raw, nil
}

// build makes the per-handshake configuration from file contents.
func build(raw [3][]byte) (*tls.Config, error) {
	pair, err := tls.X509KeyPair(raw[0], raw[1])
	if err != nil {
		return nil, fmt.Errorf("%w: server certificate and key: %w", ErrInvalidFiles, err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(raw[2]) {
		return nil, fmt.Errorf("%w: client CA file holds no PEM certificate", ErrInvalidFiles)
	}
	return &tls.Config{
		MinVersion:   tls.VersionTLS12,
		NextProtos:   []string{"h2"},
		Certificates: []tls.Certificate{pair},
		ClientAuth:   tls.RequireAndVerifyClientCert,
		ClientCAs:    pool,
	}, nil
}

// HTTP1ServerConfig is ServerConfig for an HTTP/1.1 server (ALPN
// "http/1.1" instead of "h2"): the activator module's state and report
// server, which Envoy reaches through a TCP proxy whose upstream TLS
// offers http/1.1. Same certificates, client CA and reloading.
func (r *Reloader) HTTP1ServerConfig() *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		NextProtos: []string{"http/1.1"},
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
			r.maybeReload()
			c := r.cur.Load().Clone()
			c.NextProtos = []string{"http/1.1"}
			return c, nil
		},
	}
}
