//go:build cgo

package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/thaw-dev/thaw/module/state"
)

// conn follows thaw's state stream and sends counts and pokes, one per
// (stateURL, reportURL, node) however many filter configs name it. It runs
// on goroutines of its own, never on an Envoy thread. When thaw is
// unreachable the table keeps the last state it had.
type conn struct {
	key    string
	refs   int
	cfg    state.FilterConfig
	cancel context.CancelFunc
	pokeMu sync.Mutex
	pokes  map[string]bool
	kick   chan struct{}
	// resumed is set once a state update was applied: later connections
	// ask thaw to resume (state.ResumeParam). Only follow's goroutine
	// touches it.
	resumed bool
	// applied is the Update.Seq of the last update applied on the
	// current stream (0: none), echoed in reports (Report.Applied) so
	// thaw knows which state this module holds; reset on each connection.
	applied atomic.Uint64
}

var (
	connsMu sync.Mutex
	conns   = map[string]*conn{}
	client  = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 2, IdleConnTimeout: time.Minute}}
)

func acquireConn(cfg state.FilterConfig) *conn {
	// Envoy's --service-node overrides its bootstrap's node id, so it is
	// the id this Envoy's xDS stream carries even when the listener names
	// a node: several Envoys sharing one `thaw local` listener (which names
	// thaw local's own Envoy) each report as themselves.
	if n := cmdlineNode(); n != "" {
		cfg.Node = n
	} else if cfg.Node == "" {
		logf("the filter configuration names no node and Envoy was started without --service-node: thaw cannot tell this Envoy apart")
	}
	key := cfg.StateURL + "\x00" + cfg.ReportURL + "\x00" + cfg.Node
	connsMu.Lock()
	defer connsMu.Unlock()
	if c := conns[key]; c != nil {
		c.refs++
		return c
	}
	ctx, cancel := context.WithCancel(context.Background())
	c := &conn{key: key, refs: 1, cfg: cfg, cancel: cancel, pokes: map[string]bool{}, kick: make(chan struct{}, 1)}
	conns[key] = c
	if cfg.StateURL != "" {
		go c.follow(ctx)
	}
	if cfg.ReportURL != "" {
		table.SetOnPoke(c.poke)
		go c.report(ctx)
	}
	return c
}

func releaseConn(c *conn) {
	connsMu.Lock()
	defer connsMu.Unlock()
	if c.refs--; c.refs == 0 {
		c.cancel()
		delete(conns, c.key)
	}
}

// follow reads the state stream (one JSON Update per line), reconnecting
// with a capped backoff.
func (c *conn) follow(ctx context.Context) {
	backoff := 50 * time.Millisecond
	for ctx.Err() == nil {
		delivered, err := c.followOnce(ctx)
		if ctx.Err() != nil {
			return
		}
		if delivered {
			backoff = 50 * time.Millisecond
		}
		logf("state stream %s: %v; retrying in %v (keeping the last state)", c.cfg.StateURL, err, backoff)
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, 2*time.Second)
	}
}

// followOnce reads one connection of the stream; delivered reports that
// at least one update was applied (the backoff starts over).
func (c *conn) followOnce(ctx context.Context) (delivered bool, err error) {
	u, err := url.Parse(c.cfg.StateURL)
	if err != nil {
		return false, err
	}
	q := u.Query()
	q.Set("node", c.cfg.Node)
	if c.resumed {
		q.Set(state.ResumeParam, "1")
	}
	if c.cfg.ReportURL != "" { // the echo goes out with reports
		q.Set(state.SeqParam, "1")
	}
	q.Set(state.EarlyParam, "1") // unconfirmed backends through DstCluster (early.go)
	c.applied.Store(0)
	u.RawQuery = q.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return false, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return false, &httpError{resp.Status}
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), state.MaxMessageBytes)
	refused := false
	for sc.Scan() {
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		u, err := state.DecodeUpdate(sc.Bytes())
		if err != nil {
			logf("state stream: message refused: %v", err)
			// Later updates are incremental: this module no longer
			// holds what thaw sent, so it confirms nothing more on
			// this stream (thaw's waits for it end at their bound).
			refused = true
			continue
		}
		if err := table.Apply(u); err != nil {
			logf("state stream: %v", err) // wake policies only: the rest is installed
		}
		delivered, c.resumed = true, true
		if u.Seq != 0 && !refused {
			c.applied.Store(u.Seq)
			c.kickReport()
		}
	}
	if err := sc.Err(); err != nil {
		return delivered, err
	}
	return delivered, io.ErrUnexpectedEOF
}

// cmdlineNode is this Envoy's node id from its command line
// (--service-node), read once: it names the Envoy for filter
// configurations that name no node (the fleet's listener is the same for
// every Envoy) and wins over one that does. "" when Envoy has none (with
// no node in the configuration either, thaw refuses the stream and the
// module keeps retrying).
var cmdlineNode = sync.OnceValue(func() string {
	b, err := os.ReadFile("/proc/self/cmdline")
	if err != nil {
		logf("reading this Envoy's command line for --service-node: %v", err)
		return ""
	}
	return state.ServiceNode(b)
})

type httpError struct{ status string }

func (e *httpError) Error() string { return "thaw answered " + e.status }

// poke queues an immediate report for key; never blocks.
func (c *conn) poke(key string) {
	c.pokeMu.Lock()
	c.pokes[key] = true
	c.pokeMu.Unlock()
	c.kickReport()
}

// kickReport asks for a report now; never blocks.
func (c *conn) kickReport() {
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

// report posts counts every ReportIntervalMs and pokes at once. A revision
// idle since its last report is sent once with zeros, then skipped,
// unless it must be reported while idle (state.Table.ReportCounts).
func (c *conn) report(ctx context.Context) {
	tick := time.NewTicker(time.Duration(c.cfg.ReportIntervalMs) * time.Millisecond)
	defer tick.Stop()
	active := map[string]bool{}
	var echoed uint64 // the last Applied thaw took
	for {
		var counts bool
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			counts = true
		case <-c.kick:
		}
		rep := state.Report{Node: c.cfg.Node, Applied: c.applied.Load()}
		c.pokeMu.Lock()
		for k := range c.pokes {
			rep.Pokes = append(rep.Pokes, k)
		}
		clear(c.pokes)
		c.pokeMu.Unlock()
		if counts {
			rep.Revisions = table.ReportCounts(active, rep.Revisions)
			rep.Wake = table.WakeCounts()
			rep.HeldLimit = table.TakeHeldLimited()
		}
		if len(rep.Pokes) == 0 && len(rep.Revisions) == 0 && len(rep.Wake) == 0 && rep.HeldLimit == 0 && rep.Applied == echoed {
			continue
		}
		if c.post(ctx, &rep) {
			echoed = rep.Applied
		}
	}
}

// post sends rep; true when thaw took it.
func (c *conn) post(ctx context.Context, rep *state.Report) bool {
	body, err := json.Marshal(rep)
	if err != nil {
		logf("report: %v", err)
		return false
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.cfg.ReportURL, bytes.NewReader(body))
	if err != nil {
		logf("report: %v", err)
		return false
	}
	req.Header.Set("content-type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		logf("report to %s: %v", c.cfg.ReportURL, err)
		return false
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode < 300
}
