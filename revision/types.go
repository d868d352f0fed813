package revision

import (
	"fmt"
	"net"
	"strconv"
	"strings"
)

// Key identifies a revision: namespace and name. Local revisions use the
// namespace "local" unless their file says otherwise.
type Key struct {
	Namespace string
	Name      string
}

// String returns "namespace/name", the form used in logs, metrics labels and
// the x-thaw-revision header.
func (k Key) String() string { return k.Namespace + "/" + k.Name }

// ParseKey parses "namespace/name". It returns an error when either part is
// empty or the separator is missing.
func ParseKey(s string) (Key, error) {
	ns, name, ok := strings.Cut(s, "/")
	if !ok || ns == "" || name == "" || strings.Contains(name, "/") {
		return Key{}, fmt.Errorf("revision key %q: want namespace/name", s)
	}
	return Key{Namespace: ns, Name: name}, nil
}

// Mode says where Envoy sends a revision's traffic. The zero value is
// ModeProxy: when in doubt, requests go through the activator, which can hold
// them, rather than to backends that may not exist.
type Mode int

const (
	// ModeProxy routes the revision's traffic through the activator.
	ModeProxy Mode = iota
	// ModeServe routes the revision's traffic straight to its backends.
	ModeServe
)

// String returns "proxy" or "serve".
func (m Mode) String() string {
	switch m {
	case ModeProxy:
		return "proxy"
	case ModeServe:
		return "serve"
	default:
		return "mode(" + strconv.Itoa(int(m)) + ")"
	}
}

// Backend is one pod or local process of a revision.
type Backend struct {
	// Address is an IP address (IPv4 or IPv6), never a host name.
	Address string
	// Port is the TCP port the workload serves HTTP on.
	Port int32
	// Ready is true when the backend passes its readiness check. Only ready
	// backends receive traffic.
	Ready bool
}

// HostPort returns "address:port" (IPv6 addresses in brackets).
func (b Backend) HostPort() string {
	return net.JoinHostPort(b.Address, strconv.Itoa(int(b.Port)))
}

// ReadyCount returns how many of the backends are ready.
func ReadyCount(backends []Backend) int {
	n := 0
	for _, b := range backends {
		if b.Ready {
			n++
		}
	}
	return n
}
