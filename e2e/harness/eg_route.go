package harness

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// EGSplitMember is one entry of a RevisionSplit's traffic list
// (EGSplitRoute): the Revision's name, its percent and an optional tag.
type EGSplitMember struct {
	RevisionName string
	Percent      int
	Tag          string
}

// EGRevision is the Revision local/<name> (thaw local's revision key) of
// the Deployment <name>, port 8080, with no route.
func EGRevision(name string) string {
	return fmt.Sprintf(`---
apiVersion: thaw.dev/v1alpha1
kind: Revision
metadata: {name: %[1]s, namespace: local}
spec: {scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: %[1]s}, port: 8080}
`, name)
}

// EGSplitRoute is the RevisionSplit local/<name> with traffic members and
// an HTTPRoute <name> of Gateway eg on host whose one backendRef is that
// split.
func EGSplitRoute(name, host string, members ...EGSplitMember) string {
	var b strings.Builder
	fmt.Fprintf(&b, "---\napiVersion: thaw.dev/v1alpha1\nkind: RevisionSplit\nmetadata: {name: %s, namespace: local}\nspec:\n  traffic:\n", name)
	for _, m := range members {
		tag := ""
		if m.Tag != "" {
			tag = ", tag: " + m.Tag
		}
		fmt.Fprintf(&b, "  - {revisionName: %s, percent: %d%s}\n", m.RevisionName, m.Percent, tag)
	}
	fmt.Fprintf(&b, `---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: %[1]s, namespace: local}
spec:
  parentRefs: [{name: eg}]
  hostnames: [%[2]s]
  rules:
  - backendRefs: [{group: thaw.dev, kind: RevisionSplit, name: %[1]s}]
`, name, host)
	return b.String()
}

// RouteWait says what WaitRoute waits for.
type RouteWait struct {
	// URL is the gateway's listener (http://127.0.0.1:<port>); requests
	// are GET URL/.
	URL string
	// Host is the requests' Host header ("" for URL's own).
	Host string
	// Want, when not empty, must be in the answer's body.
	Want string
	// Every is the pause between requests (default 100 ms).
	Every time.Duration
	// Gateway, when not nil, is the gateway's process: its exit ends the
	// wait at once.
	Gateway *Process
}

// maxRouteWaitTries bounds WaitRoute's requests whatever the deadline.
const maxRouteWaitTries = 10000

// WaitRoute retries GET w.URL/ with Host w.Host until it answers 200 (with
// w.Want in the body) and returns that body; it gives up when ctx ends,
// the gateway process exits or after maxRouteWaitTries requests, with an
// error naming the host and the last answer. Each request is bounded by
// c's timeout and ctx.
func WaitRoute(ctx context.Context, c *http.Client, w RouteWait) (string, error) {
	every := w.Every
	if every <= 0 {
		every = 100 * time.Millisecond
	}
	var exited <-chan struct{}
	if w.Gateway != nil {
		exited = w.Gateway.Exited()
	}
	last := "no answer yet"
	for range maxRouteWaitTries {
		code, body, err := routeGet(ctx, c, w.URL, w.Host)
		if err == nil && code == http.StatusOK && strings.Contains(body, w.Want) {
			return body, nil
		}
		if ctx.Err() == nil { // a request cut by ctx's end is no answer
			last = fmt.Sprintf("%d %.200q %v", code, body, err)
		}
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("host %q: no 200 %q: %w (last: %s)", w.Host, w.Want, ctx.Err(), last)
		case <-exited:
			return "", fmt.Errorf("host %q: the gateway exited: %v (last: %s)", w.Host, w.Gateway.ExitErr(), last)
		case <-time.After(every):
		}
	}
	return "", fmt.Errorf("host %q: no 200 %q in %d requests (last: %s)", w.Host, w.Want, maxRouteWaitTries, last)
}

// routeGet is one GET url/ with Host host: status and body.
func routeGet(ctx context.Context, c *http.Client, url, host string) (int, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url+"/", nil)
	if err != nil {
		return 0, "", err
	}
	req.Host = host
	resp, err := c.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, string(b), err
}
