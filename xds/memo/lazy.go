package memo

import (
	"github.com/envoyproxy/go-control-plane/pkg/cache/types"

	"github.com/thaw-dev/thaw/xds/encoded"
	"github.com/thaw-dev/thaw/xds/translate"
)

// lazyVirtualHost returns a revision's virtual host, already validated,
// as an encoded.Resource that builds and encodes it when first needed:
// with on-demand hosts (translate.Config.OnDemandHosts) an Envoy gets only
// the resident hosts and those it asks for, so most of 100,000 idle
// revisions' hosts are never encoded (docs/scaling.md, "The first apply
// with on-demand hosts"). The build reads only p, which holds immutable
// inputs (the Config and Parts are read-only), so the VHDS cache may run
// it on any goroutine; its bytes are those of the eager build
// (TestOnDemandHostBytes).
func lazyVirtualHost(p translate.VirtualHostParams) *encoded.Resource {
	return encoded.NewLazy(p.Domains, func() (types.Resource, error) {
		return translate.RevisionVirtualHost(p), nil
	})
}

// refVersion returns the version a ConfirmRef names e at: none for a lazy
// host (see ConfirmRef), which is not encoded for it.
func refVersion(e *encoded.Resource) string {
	if e.IsLazy() {
		return ""
	}
	return e.Version
}
