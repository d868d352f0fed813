// Package certgen creates and renews the certificates of mutual TLS between
// the Envoy fleet and thaw: a CA, thaw's server certificate and the Envoy
// fleet's client certificate. Ensure is pure (state in, state out); stores
// read and write the result as Kubernetes Secrets (SecretStore) or files
// (DirStore) in the layout of a kubernetes.io/tls Secret: tls.crt, tls.key
// and ca.crt (the trust bundle).
package certgen
