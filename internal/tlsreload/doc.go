// Package tlsreload serves mutual TLS from certificate files that change
// while the process runs: a Reloader re-reads the server certificate, its
// key and the client CA bundle when they change on disk (a Kubernetes
// Secret volume swapping its files, cert-manager or `thaw certgen`
// renewing them) and new handshakes use the new files. Connections already
// established keep the certificates they were made with.
package tlsreload
