package statsink

import (
	"context"
	"crypto/x509"

	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/peer"
)

// nodeKey returns the key of a stream's node state: the node id Envoy sent,
// or, when the stream came over mutual TLS with a verified client
// certificate, "<certificate identity>/<node id>" (certIdentity). With mTLS a
// client therefore feeds, and can hold, only node state under its own
// certificate: it cannot take over or block another identity's node ids.
// The key is also the Source of the node's samples.
func nodeKey(ctx context.Context, id string) string {
	p, ok := peer.FromContext(ctx)
	if !ok {
		return id
	}
	ti, ok := p.AuthInfo.(credentials.TLSInfo)
	if !ok || len(ti.State.VerifiedChains) == 0 || len(ti.State.VerifiedChains[0]) == 0 {
		return id
	}
	if ident := certIdentity(ti.State.VerifiedChains[0][0]); ident != "" {
		return ident + "/" + id
	}
	return id
}

// certIdentity names a client certificate: its first URI SAN (a SPIFFE ID,
// say), else its subject common name ("" when it has neither).
func certIdentity(c *x509.Certificate) string {
	if len(c.URIs) > 0 {
		return c.URIs[0].String()
	}
	return c.Subject.CommonName
}
