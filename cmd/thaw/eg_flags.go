package main

import (
	"time"

	"github.com/spf13/pflag"

	"github.com/thaw-dev/thaw/egext"
)

// egFlags turn on the Envoy Gateway extension (docs/envoy-gateway.md).
type egFlags struct {
	enabled      bool
	initialFetch time.Duration
}

func (e *egFlags) add(fl *pflag.FlagSet) {
	fl.BoolVar(&e.enabled, "eg-extension", false,
		"serve Envoy Gateway's extension hooks (PostClusterModify, PostRouteModify) on --grpc-address, with its TLS, on every replica: EG's Envoy then routes to Revisions with one hop and fetches their endpoints from thaw; with --activator=module EG's Envoys run the activator module (EG must send listeners to the translation hook; docs/envoy-gateway.md)")
	fl.DurationVar(&e.initialFetch, "eg-initial-fetch-timeout", egext.DefaultInitialFetchTimeout,
		"initial_fetch_timeout the EG hooks put on revision clusters: how long EG's Envoy waits for a revision's first endpoints from thaw (> 0)")
}
