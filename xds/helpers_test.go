package xds

import (
	"github.com/envoyproxy/go-control-plane/pkg/cache/types"

	"github.com/thaw-dev/thaw/xds/cache"
	"github.com/thaw-dev/thaw/xds/internal/xdstest"
	"github.com/thaw-dev/thaw/xds/translate"
)

// Shared test builders (xdstest).
var (
	ready         = xdstest.Ready
	benchSnapshot = xdstest.BenchSnapshot
	benchRegistry = xdstest.BenchRegistry
	loadRegistry  = xdstest.LoadRegistry
)

// testConfig is the config of translate's golden files.
func testConfig() translate.Config {
	cfg := translate.DefaultConfig()
	cfg.HTTPAddress = "127.0.0.1"
	cfg.HTTPPort = 18080
	return cfg
}

// messages returns what dc holds as messages; it panics on an encoding
// that does not decode.
func messages(dc *cache.Delta) map[string]types.Resource {
	out, err := dc.Messages()
	if err != nil {
		panic(err)
	}
	return out
}
