package encoded

import (
	"sync"

	"github.com/envoyproxy/go-control-plane/pkg/cache/types"
	"google.golang.org/protobuf/encoding/protowire"
)

// lazy is a Resource whose encoding and version wait until something
// needs them (NewLazy).
type lazy struct {
	once  sync.Once
	build func() (types.Resource, error)
	// domains are the virtual host's domains (route.v3.VirtualHost field
	// 2), known without the encoding: the on-demand index needs them.
	domains []string
	bytes   []byte
	version string
	err     error
}

// NewLazy returns a Resource whose encoding and version are computed by
// build, once, by the first Get (or Version, Bytes): with on-demand
// virtual hosts (translate.Config.OnDemandHosts) most revisions' hosts are
// never sent, and their encoding and SHA-256 (~1.2 KiB of heap per host,
// ~0.5 s of CPU per 100,000) need not be computed at start. build must
// read only immutable inputs: it may run on any goroutine. domains are
// the virtual host's domains, for Domains. The Bytes and Version fields of
// a lazy Resource stay empty: read it with Get.
func NewLazy(domains []string, build func() (types.Resource, error)) *Resource {
	return &Resource{lazy: &lazy{build: build, domains: domains}}
}

// Get returns r's encoding and version, computing them first for a lazy
// Resource not yet materialised (safe for concurrent use: every caller
// gets the same bytes and version). The error is build's, or the
// encoding's; it is returned again by every later call.
func (r *Resource) Get() ([]byte, string, error) {
	l := r.lazy
	if l == nil {
		return r.Bytes, r.Version, nil
	}
	l.once.Do(func() {
		m, err := l.build()
		if err == nil {
			l.bytes, l.version, err = Hash(m)
		}
		l.err = err
		l.build = nil // its inputs are no longer needed
	})
	return l.bytes, l.version, l.err
}

// IsLazy reports whether r was made by NewLazy.
func (r *Resource) IsLazy() bool { return r.lazy != nil }

// DomainsEncoding returns, for a lazy Resource, a VirtualHost encoding
// holding only its domains (field 2), which is what the on-demand index
// reads (xds/ondemand.Domains); for another Resource, its Bytes.
func (r *Resource) DomainsEncoding() []byte {
	if r.lazy == nil {
		return r.Bytes
	}
	b := []byte{}
	for _, d := range r.lazy.domains {
		b = protowire.AppendTag(b, 2, protowire.BytesType)
		b = protowire.AppendString(b, d)
	}
	return b
}
