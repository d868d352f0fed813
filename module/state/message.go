package state

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"time"
)

// Limits that bound what one message may create; a message past them is
// refused whole (the module keeps its last state).
const (
	// MaxRevisions is the most revisions one module tracks.
	MaxRevisions = 200_000
	// MaxBackends is the most backends one revision may list.
	MaxBackends = 10_000
	// MaxQueueDepth bounds a revision's queue depth (held requests).
	MaxQueueDepth = 1_000_000
	// MaxMessageBytes is the largest state message decoded.
	MaxMessageBytes = 64 << 20
	// MaxWakeBytes is the largest wake policy of one revision (a policy
	// within wake's own bounds is far smaller).
	MaxWakeBytes = 8 << 20
)

// ResumeParam is the state stream's query parameter ("resume=1") by which
// a module that already applied a state says it keeps serving from it
// while it reconnects: thaw may then defer the stream's first update
// until this node's Envoy ACKed the backends it lists (modsvc,
// Server.FirstUpdateWait). A module without state (Envoy just started)
// omits it and gets its first update at once.
const ResumeParam = "resume"

// SeqParam is the state stream's query parameter ("seq=1") by which a
// module asks thaw to number its updates (Update.Seq) and echoes the
// number of the last one it applied in its reports (Report.Applied).
// thaw then knows which state each module holds: an endpoint update that
// removes one backend and adds another sends the additions to Envoy only
// once every such module applied the removal (xds removal first,
// docs/activator.md). A stream without it gets no Seq (a module built
// before it refuses unknown fields) and is not waited for.
const SeqParam = "seq"

// ErrInvalid is wrapped by every decoding error.
var ErrInvalid = errors.New("activator state: invalid message")

// Update is one message of thaw's state stream (JSON, one per line):
// the revisions listed replace this Envoy's view of them whole, the keys in
// Removed are forgotten (their held requests get the hold-timeout answer),
// and Full means every revision not listed is removed too.
type Update struct {
	Full      bool             `json:"full,omitempty"`
	Revisions []RevisionUpdate `json:"revisions,omitempty"`
	Removed   []string         `json:"removed,omitempty"`
	// MaxHeld bounds the requests this Envoy's module holds at once over
	// all revisions (0: no bound). thaw derives it from the Envoy's
	// open-file limit (app.FileBudget.MaxHeld): each held HTTP/1.1
	// request keeps a client connection, one file, open. Read from full
	// updates only.
	MaxHeld int64 `json:"maxHeld,omitempty"`
	// Seq numbers the update on a stream that asked for it (SeqParam;
	// 0: not numbered). Numbers increase along a stream and are unique
	// to one thaw process (they start at a random value), so an echo
	// from an earlier stream or thaw never matches. The module echoes
	// the Seq of the last update it applied in Report.Applied.
	Seq uint64 `json:"seq,omitempty"`
}

// RevisionUpdate is a revision's state for this Envoy.
type RevisionUpdate struct {
	// Key is "namespace/name".
	Key string `json:"key"`
	// QueueDepth is the most requests held at once (>= 1).
	QueueDepth int `json:"queueDepth"`
	// HoldTimeoutMs is how long a request is held at most, milliseconds (>= 1).
	HoldTimeoutMs int64 `json:"holdTimeoutMs"`
	// Backends are the ready backends with this Envoy's share of each.
	Backends []BackendUpdate `json:"backends,omitempty"`
	// Wake is the part of the revision's wake policy that request holders
	// apply (wake.Policy.HolderConfig: rules, waiting page, cold-start
	// header), JSON in the shape of wake.Config; absent: no policy. The
	// module compiles it when it differs from the revision's last one
	// (Table.Apply), never per request.
	Wake json.RawMessage `json:"wake,omitempty"`
	// WakeFailure, when set while the revision has no backend, says its
	// wake-up failed: held and new requests are answered at once.
	WakeFailure *WakeFailure `json:"wakeFailure,omitempty"`
}

// BackendUpdate is one ready backend and this Envoy's slots on it.
type BackendUpdate struct {
	// Addr is "ip:port" (an IP literal: Envoy's upstream override host
	// takes no name).
	Addr string `json:"addr"`
	// Slots is this Envoy's share of the backend's container concurrency;
	// 0 means unlimited (container concurrency 0), -1 means no share here
	// (the backend's capacity went to other Envoys).
	Slots int32 `json:"slots"`
	// Unconfirmed marks a ready backend this Envoy has not ACKed yet
	// (its revision's cluster does not list it): the module sends its
	// requests through DstCluster, not pinned on the revision's cluster.
	// Sent only on a stream that asked for it (EarlyParam).
	Unconfirmed bool `json:"unconfirmed,omitempty"`
}

// HoldTimeout returns the hold timeout as a duration.
func (r *RevisionUpdate) HoldTimeout() time.Duration {
	return time.Duration(r.HoldTimeoutMs) * time.Millisecond
}

// DecodeUpdate parses and validates one state message.
// Errors wrap ErrInvalid and name the first bad field.
func DecodeUpdate(b []byte) (*Update, error) {
	if len(b) > MaxMessageBytes {
		return nil, fmt.Errorf("%w: %d bytes, limit %d", ErrInvalid, len(b), MaxMessageBytes)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var u Update
	if err := dec.Decode(&u); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	if u.MaxHeld < 0 {
		return nil, fmt.Errorf("%w: maxHeld %d is negative", ErrInvalid, u.MaxHeld)
	}
	if len(u.Revisions)+len(u.Removed) > MaxRevisions {
		return nil, fmt.Errorf("%w: %d revisions, limit %d", ErrInvalid, len(u.Revisions)+len(u.Removed), MaxRevisions)
	}
	seen := make(map[string]bool, len(u.Revisions))
	for i := range u.Revisions {
		r := &u.Revisions[i]
		if err := validKey(r.Key); err != nil {
			return nil, fmt.Errorf("%w: revisions[%d]: %w", ErrInvalid, i, err)
		}
		if seen[r.Key] {
			return nil, fmt.Errorf("%w: revision %q listed twice", ErrInvalid, r.Key)
		}
		seen[r.Key] = true
		if r.QueueDepth < 1 || r.QueueDepth > MaxQueueDepth {
			return nil, fmt.Errorf("%w: revision %q: queueDepth %d not in [1, %d]", ErrInvalid, r.Key, r.QueueDepth, MaxQueueDepth)
		}
		if r.HoldTimeoutMs < 1 || r.HoldTimeoutMs > int64(24*time.Hour/time.Millisecond) {
			return nil, fmt.Errorf("%w: revision %q: holdTimeoutMs %d not in [1, 86400000]", ErrInvalid, r.Key, r.HoldTimeoutMs)
		}
		if r.WakeFailure != nil {
			if err := r.WakeFailure.validate(); err != nil {
				return nil, fmt.Errorf("%w: revision %q: %w", ErrInvalid, r.Key, err)
			}
		}
		if len(r.Wake) > MaxWakeBytes {
			return nil, fmt.Errorf("%w: revision %q: wake policy of %d bytes, limit %d", ErrInvalid, r.Key, len(r.Wake), MaxWakeBytes)
		}
		if len(r.Backends) > MaxBackends {
			return nil, fmt.Errorf("%w: revision %q: %d backends, limit %d", ErrInvalid, r.Key, len(r.Backends), MaxBackends)
		}
		addrs := make(map[string]bool, len(r.Backends))
		for j, b := range r.Backends {
			if _, err := netip.ParseAddrPort(b.Addr); err != nil {
				return nil, fmt.Errorf("%w: revision %q: backends[%d]: %w", ErrInvalid, r.Key, j, err)
			}
			if addrs[b.Addr] {
				return nil, fmt.Errorf("%w: revision %q: backend %s listed twice", ErrInvalid, r.Key, b.Addr)
			}
			addrs[b.Addr] = true
			if b.Slots < -1 {
				return nil, fmt.Errorf("%w: revision %q: backend %s: slots %d < -1", ErrInvalid, r.Key, b.Addr, b.Slots)
			}
		}
	}
	for i, k := range u.Removed {
		if err := validKey(k); err != nil {
			return nil, fmt.Errorf("%w: removed[%d]: %w", ErrInvalid, i, err)
		}
	}
	return &u, nil
}

// RouteConfig is the module's per-route configuration (JSON), written by
// thaw's xDS translation on a revision's route: it names the revision, so a
// client header never chooses one.
type RouteConfig struct {
	Revision string `json:"revision"`
	// Cluster, when set, is the revision's cluster on a route whose
	// upstream is named by request header ClusterHeader (thaw's idle
	// clusters, docs/scaling.md): the module overwrites that header with
	// Cluster on every request of the route once Envoy holds the cluster
	// (a client never chooses an upstream), and holds the request while
	// it does not. Empty: the route names its cluster itself.
	Cluster string `json:"cluster,omitempty"`
}

// ClusterHeader is the request header a revision route with
// RouteConfig.Cluster takes its upstream cluster from (the route's
// cluster_header); only the module writes it.
const ClusterHeader = "x-thaw-cluster"

// maxClusterName bounds RouteConfig.Cluster (Envoy's own limit on a
// cluster name is far larger; thaw's names are rev_<namespace>_<name>).
const maxClusterName = 320

// DecodeRouteConfig parses and validates a per-route configuration.
func DecodeRouteConfig(b []byte) (RouteConfig, error) {
	c, ok := decodeRouteConfigFast(b) // routeconfig_fast.go
	if !ok {
		var err error
		if c, err = decodeRouteConfigJSON(b); err != nil {
			return RouteConfig{}, err
		}
	}
	if err := validKey(c.Revision); err != nil {
		return RouteConfig{}, fmt.Errorf("%w: route config: %w", ErrInvalid, err)
	}
	if err := validClusterName(c.Cluster); err != nil {
		return RouteConfig{}, fmt.Errorf("%w: route config: %w", ErrInvalid, err)
	}
	return c, nil
}

// decodeRouteConfigJSON is DecodeRouteConfig's strict decoder, without
// validation.
func decodeRouteConfigJSON(b []byte) (RouteConfig, error) {
	var c RouteConfig
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return RouteConfig{}, fmt.Errorf("%w: route config: %w", ErrInvalid, err)
	}
	return c, nil
}

// FilterConfig is the module's filter configuration (JSON).
type FilterConfig struct {
	// StateURL is thaw's state stream, "http://host:port/path". Empty:
	// no stream (every revision is unknown and held until HoldTimeoutMs).
	StateURL string `json:"stateURL,omitempty"`
	// ReportURL receives counts and pokes (POST, JSON); empty: none sent.
	ReportURL string `json:"reportURL,omitempty"`
	// Node is this Envoy's node id, sent with the stream and reports.
	// Envoy's --service-node (ServiceNode), when its command line has one,
	// wins over it (module/activator acquireConn): several Envoys sharing
	// one listener each report as themselves. Empty and no --service-node:
	// thaw refuses the stream.
	Node string `json:"node,omitempty"`
	// HoldTimeoutMs and QueueDepth apply to revisions thaw has not sent.
	HoldTimeoutMs int64 `json:"holdTimeoutMs,omitempty"`
	QueueDepth    int   `json:"queueDepth,omitempty"`
	// RetryAfterSeconds is the Retry-After of 503 answers (default 1).
	RetryAfterSeconds int `json:"retryAfterSeconds,omitempty"`
	// ReportIntervalMs is how often counts are reported (default 1000).
	ReportIntervalMs int64 `json:"reportIntervalMs,omitempty"`
	// Revision, when set, is the revision of every route this filter runs
	// on that has no per-route configuration: for Envoy Gateway, whose
	// EnvoyExtensionPolicy gives each policy (one per revision route) a
	// filter configuration of its own.
	Revision string `json:"revision,omitempty"`
}

// DecodeFilterConfig parses a filter configuration and fills defaults.
func DecodeFilterConfig(b []byte) (FilterConfig, error) {
	var c FilterConfig
	if len(bytes.TrimSpace(b)) > 0 {
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&c); err != nil {
			return FilterConfig{}, fmt.Errorf("%w: filter config: %w", ErrInvalid, err)
		}
	}
	for name, u := range map[string]string{"stateURL": c.StateURL, "reportURL": c.ReportURL} {
		if u != "" && !strings.HasPrefix(u, "http://") && !strings.HasPrefix(u, "https://") {
			return FilterConfig{}, fmt.Errorf("%w: filter config: %s %q is not an http(s) URL", ErrInvalid, name, u)
		}
	}
	if c.Revision != "" {
		if err := validKey(c.Revision); err != nil {
			return FilterConfig{}, fmt.Errorf("%w: filter config: %w", ErrInvalid, err)
		}
	}
	if c.HoldTimeoutMs <= 0 {
		c.HoldTimeoutMs = 30_000
	}
	if c.QueueDepth <= 0 || c.QueueDepth > MaxQueueDepth {
		c.QueueDepth = 10_000
	}
	if c.RetryAfterSeconds <= 0 {
		c.RetryAfterSeconds = 1
	}
	if c.ReportIntervalMs <= 0 {
		c.ReportIntervalMs = 1000
	}
	return c, nil
}

// validKey checks "namespace/name" with both parts non-empty.
func validKey(k string) error {
	ns, name, ok := strings.Cut(k, "/")
	if !ok || ns == "" || name == "" || strings.Contains(name, "/") || len(k) > 253+64 {
		return fmt.Errorf("revision key %q is not namespace/name", k)
	}
	return nil
}

// validClusterName accepts "" or a cluster name of at most
// maxClusterName bytes of [A-Za-z0-9_.-] (what thaw's cluster names use;
// a header value must not carry control characters).
func validClusterName(c string) error {
	if len(c) > maxClusterName {
		return fmt.Errorf("cluster name of %d bytes: at most %d", len(c), maxClusterName)
	}
	for i := 0; i < len(c); i++ {
		b := c[i]
		if !(b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9' || b == '_' || b == '.' || b == '-') {
			return fmt.Errorf("cluster name %q: byte %d is not one of [A-Za-z0-9_.-]", c, i)
		}
	}
	return nil
}

// Report is what a module sends thaw (POST, JSON): counts per revision
// every report interval, and pokes (revisions at zero that started holding
// a request) at once.
type Report struct {
	Node      string           `json:"node,omitempty"`
	Revisions []RevisionCounts `json:"revisions,omitempty"`
	Pokes     []string         `json:"pokes,omitempty"`
	// Wake counts the requests that wake policies answered without
	// holding them since the previous report (Table.WakeCounts).
	Wake []WakeCount `json:"wake,omitempty"`
	// HeldLimit counts the requests answered 503 since the previous
	// report because Update.MaxHeld requests were held already
	// (Table.TakeHeldLimited); thaw adds it to the held_limit outcome.
	HeldLimit int64 `json:"heldLimit,omitempty"`
	// Applied is the Update.Seq of the last state update this module
	// applied on its current stream (0: none numbered yet). Requires
	// Node: thaw matches it against what it sent that node's stream.
	Applied uint64 `json:"applied,omitempty"`
}

// RevisionCounts are a revision's requests held and in flight in one
// Envoy at the moment of the report.
type RevisionCounts struct {
	Key      string `json:"key"`
	Held     int64  `json:"held"`
	InFlight int64  `json:"inFlight"`
	// Early is how many of InFlight go through DstCluster to a backend
	// this Envoy has not ACKed: Envoy's stats count them in no revision
	// cluster, so thaw adds them to the autoscaler's samples. Present only
	// while such requests run, which only a thaw that sent unconfirmed
	// backends (EarlyParam) causes.
	Early int64 `json:"early,omitempty"`
}

// MaxReportBytes is the largest report thaw decodes.
const MaxReportBytes = 16 << 20

// DecodeReport parses and validates a report (thaw's side).
func DecodeReport(b []byte) (*Report, error) {
	if len(b) > MaxReportBytes {
		return nil, fmt.Errorf("%w: report of %d bytes, limit %d", ErrInvalid, len(b), MaxReportBytes)
	}
	var r Report
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		return nil, fmt.Errorf("%w: report: %w", ErrInvalid, err)
	}
	if r.HeldLimit < 0 {
		return nil, fmt.Errorf("%w: report: heldLimit %d is negative", ErrInvalid, r.HeldLimit)
	}
	if r.Applied != 0 && r.Node == "" {
		return nil, fmt.Errorf("%w: report: applied %d names no node", ErrInvalid, r.Applied)
	}
	if len(r.Revisions)+len(r.Pokes)+len(r.Wake) > MaxRevisions {
		return nil, fmt.Errorf("%w: report of %d revisions, limit %d", ErrInvalid, len(r.Revisions)+len(r.Pokes)+len(r.Wake), MaxRevisions)
	}
	for i, c := range r.Wake {
		if err := validKey(c.Key); err != nil {
			return nil, fmt.Errorf("%w: report wake[%d]: %w", ErrInvalid, i, err)
		}
		if c.Count < 0 || len(c.Rule) > 63 || (c.Rule == "") != c.Page {
			return nil, fmt.Errorf("%w: report wake[%d]: want a rule name (at most 63 bytes) or page, and a count >= 0", ErrInvalid, i)
		}
	}
	for i, c := range r.Revisions {
		if err := validKey(c.Key); err != nil {
			return nil, fmt.Errorf("%w: report revisions[%d]: %w", ErrInvalid, i, err)
		}
		if c.Held < 0 || c.InFlight < 0 || c.Early < 0 {
			return nil, fmt.Errorf("%w: report: revision %q: negative count", ErrInvalid, c.Key)
		}
		if c.Early > c.InFlight {
			return nil, fmt.Errorf("%w: report: revision %q: early %d above inFlight %d", ErrInvalid, c.Key, c.Early, c.InFlight)
		}
	}
	for i, k := range r.Pokes {
		if err := validKey(k); err != nil {
			return nil, fmt.Errorf("%w: report pokes[%d]: %w", ErrInvalid, i, err)
		}
	}
	return &r, nil
}
