package state

import "bytes"

// decodeRouteConfigFast parses a per-route configuration of exactly the
// shape thaw writes (xds/translate's json.Marshal of RouteConfig:
// `{"revision":"K"}` or `{"revision":"K","cluster":"C"}`, printable ASCII
// without escapes) with no allocation beyond the two strings; ok is false
// for anything else, which takes encoding/json's strict decoder. Envoy
// calls the per-route hook once per revision route at start, and the
// decoder's buffers were two thirds of the hook's garbage (100,000 routes:
// 207 of 307 MB), whose collections grew the hook's cost per route with
// the table (docs/scaling.md). Whatever it accepts decodes the same in
// the strict decoder (FuzzDecodeConfig). Validation is the caller's.
func decodeRouteConfigFast(b []byte) (c RouteConfig, ok bool) {
	const revPrefix, clusterPrefix = `{"revision":"`, `,"cluster":"`
	rest, found := bytes.CutPrefix(b, []byte(revPrefix))
	if !found {
		return RouteConfig{}, false
	}
	rev, rest, ok := plainJSONString(rest)
	if !ok {
		return RouteConfig{}, false
	}
	var cluster []byte
	if rest, found = bytes.CutPrefix(rest, []byte(clusterPrefix)); found {
		if cluster, rest, ok = plainJSONString(rest); !ok {
			return RouteConfig{}, false
		}
	}
	if len(rest) != 1 || rest[0] != '}' {
		return RouteConfig{}, false
	}
	return RouteConfig{Revision: string(rev), Cluster: string(cluster)}, true
}

// plainJSONString returns the body of a JSON string up to its closing
// quote and what follows it, when the body is printable ASCII without a
// backslash (no escape, so its bytes are its value).
func plainJSONString(b []byte) (s, rest []byte, ok bool) {
	for i, c := range b {
		switch {
		case c == '"':
			return b[:i], b[i+1:], true
		case c < 0x20 || c > 0x7e || c == '\\':
			return nil, nil, false
		}
	}
	return nil, nil, false
}
