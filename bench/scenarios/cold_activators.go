package main

import (
	"fmt"
	"strconv"
	"strings"
)

// coldActivators are the activators scenario cold measures, back to back in
// one run (-cold-activators): "extproc" (thaw local's ext_proc activator,
// results' Cold) and "module" (--activator=module, results' ColdModule).
var coldActivators = []string{"extproc"}

// parseActivators parses -cold-activators: extproc and/or module,
// comma-separated, each at most once.
func parseActivators(v string) ([]string, error) {
	var out []string
	for f := range strings.SplitSeq(v, ",") {
		f = strings.TrimSpace(f)
		if f != "extproc" && f != "module" {
			return nil, fmt.Errorf("%q: want extproc or module, comma-separated", f)
		}
		for _, o := range out {
			if o == f {
				return nil, fmt.Errorf("%q named twice", f)
			}
		}
		out = append(out, f)
	}
	return out, nil
}

// logFlipToAck logs thaw's mean xDS change-to-ACK time
// (thaw_xds_flip_to_ack_seconds' sum over count): on the module path a
// woken backend reaches the module only once Envoy ACKed endpoints listing
// it, so this wait is part of every module cold start; on the ext_proc
// path the held request is released at once to an original-destination
// cluster and the ACK is off the request's path.
func logFlipToAck(e *env, th *thaw, name string) {
	body, err := fetchBody(e.ctx, th.adminURL+"/metrics")
	if err != nil {
		e.logf("%s: thaw /metrics: %v", name, err)
		return
	}
	var sum, count float64
	for line := range strings.SplitSeq(string(body), "\n") {
		if v, ok := strings.CutPrefix(line, "thaw_xds_flip_to_ack_seconds_sum "); ok {
			sum, _ = strconv.ParseFloat(strings.TrimSpace(v), 64)
		}
		if v, ok := strings.CutPrefix(line, "thaw_xds_flip_to_ack_seconds_count "); ok {
			count, _ = strconv.ParseFloat(strings.TrimSpace(v), 64)
		}
	}
	if count > 0 {
		e.logf("%s: xDS change to Envoy's ACK: mean %.1f ms over %.0f changes", name, 1000*sum/count, count)
	}
}
