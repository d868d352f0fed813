package main

import (
	"fmt"
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
