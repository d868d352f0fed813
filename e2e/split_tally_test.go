//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/thaw-dev/thaw/e2e/harness"
)

// tallyByBackend sends n GET / to host from conc workers, each request
// carrying a client-sent x-thaw-revision that Envoy must replace
// (getSpoofed), and counts the 200 answers by backend: name(body) says
// which one answered ("" when the body names none). Any other outcome
// (an error, another status, a body naming no backend) is a failure,
// counted; at most 5 are described.
func tallyByBackend(ctx context.Context, th *harness.Thaw, host string, n, conc int, name func(body string) string) (counts map[string]int, failed int, fails []string) {
	c := client(30 * time.Second)
	var mu sync.Mutex
	counts = map[string]int{}
	var wg sync.WaitGroup
	for w := range conc {
		wg.Go(func() {
			for i := w; i < n; i += conc {
				code, body, err := getSpoofed(ctx, c, th, host)
				backend := ""
				if err == nil && code == http.StatusOK {
					backend = name(body)
				}
				mu.Lock()
				switch {
				case backend != "":
					counts[backend]++
				case len(fails) < 5:
					fails = append(fails, fmt.Sprintf("code=%d err=%v body=%.80q", code, err, body))
					fallthrough
				default:
					failed++
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return counts, failed, fails
}

// getSpoofed is get with a client-sent x-thaw-revision: local/v3.
func getSpoofed(ctx context.Context, c *http.Client, th *harness.Thaw, host string) (int, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, th.HTTPURL+"/", nil)
	if err != nil {
		return 0, "", err
	}
	req.Host = host
	req.Header.Set("X-Thaw-Revision", "local/v3")
	resp, err := c.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), err
}
