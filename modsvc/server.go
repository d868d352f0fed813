package modsvc

import (
	"fmt"
	"io"
	"net/http"
	"time"

	"go.uber.org/zap"
	"k8s.io/utils/clock"

	"github.com/thaw-dev/thaw/autoscaler"
	"github.com/thaw-dev/thaw/module/state"
	"github.com/thaw-dev/thaw/revision"
)

// Paths the Server answers.
const (
	StatePath  = "/activator/v1/state"
	ReportPath = "/activator/v1/report"
	// HealthPath answers 200 on the replica that serves modules (the
	// leader; thaw's fleet bootstrap health-checks it on cluster
	// thaw_module), 503 elsewhere. Served by internal/app, not Server.
	HealthPath = "/activator/v1/healthz"
)

// Server serves the module's state stream and takes its reports.
type Server struct {
	// Registry is followed for state (required).
	Registry *revision.Registry
	// Recorder takes held counts, plus the requests in flight through
	// thaw_activator_dst (state.RevisionCounts.Early, counted in no
	// revision cluster by Envoy), as samples; Poker takes pokes (optional).
	Recorder autoscaler.Recorder
	Poker    autoscaler.Poker
	// Envoys returns how many Envoys share every backend and this one's
	// index (nil: the Envoys with a state stream open on this Server, and
	// this one's rank among their sorted node ids; see fleet).
	Envoys func(node string) (n, index int)
	// Confirmer, when set, holds each backend back from a node's module
	// until that node ACKed endpoints listing it (nil: sent at once).
	Confirmer Confirmer
	// Early sends a module that asks (state.EarlyParam) the ready
	// backends its Envoy has not ACKed yet, marked
	// state.BackendUpdate.Unconfirmed, instead of withholding them: the
	// module routes their requests through thaw's ORIGINAL_DST cluster.
	// Set only where every revision route's cluster is written by the
	// module (translate.ClusterRoutes).
	Early bool
	// WakeCounter counts the requests the module's wake policies
	// answered without holding them (nil: not counted).
	WakeCounter WakeCounter
	// MaxHeld returns the most requests each Envoy's module may hold at
	// once (state.Update.MaxHeld; 0 or less: no bound). nil: no bound.
	MaxHeld func() int
	// HeldLimitCounter counts the requests the modules answered at that
	// bound (nil: not counted).
	HeldLimitCounter HeldLimitCounter
	Logger           *zap.Logger
	// Now is the clock of samples (nil: time.Now).
	Now func() time.Time
	// FirstUpdateWait bounds how long a stream's first (full) update is
	// deferred while it would withhold ready backends the node has not
	// ACKed yet (0: DefaultFirstUpdateWait; negative: not deferred). Only
	// a module that asks to resume (state.ResumeParam) is deferred: one
	// that reconnects after a thaw restart keeps its last state
	// meanwhile instead of replacing it with one that lists no backend
	// until its Envoy's new xDS stream ACKs; on the bound, what is
	// confirmed is sent and the wait is logged.
	FirstUpdateWait time.Duration
	// Clock times FirstUpdateWait (nil: the real clock).
	Clock clock.Clock

	fleet    fleet
	reported reported
	seqs     appliedStates
}

// ServeHTTP implements http.Handler for StatePath and ReportPath.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.URL.Path == StatePath && r.Method == http.MethodGet:
		s.serveState(w, r)
	case r.URL.Path == ReportPath && r.Method == http.MethodPost:
		s.serveReport(w, r)
	default:
		http.NotFound(w, r)
	}
}

func (s *Server) logger() *zap.Logger {
	if s.Logger == nil {
		return zap.NewNop()
	}
	return s.Logger
}

// serveState writes a full update now and after every registry change
// until the client goes away. With a Confirmer, a backend reaches the
// node's module only once that node ACKed endpoints listing it (see
// Confirmer); updates withheld for that are sent when the ACK arrives.
func (s *Server) serveState(w http.ResponseWriter, r *http.Request) {
	node := r.URL.Query().Get("node")
	if node == "" {
		// Backends are ordered after each node's own ACK: a stream that
		// names no node could be neither confirmed nor told apart.
		http.Error(w, "node is required (the Envoy's xDS node id)", http.StatusBadRequest)
		return
	}
	fl, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming unsupported", http.StatusInternalServerError)
		return
	}
	envoys := s.Envoys
	var members <-chan struct{}
	if envoys == nil {
		leave, err := s.fleet.join(node)
		if err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		defer leave()
		envoys = s.fleet.share
	}
	w.Header().Set("content-type", "application/x-ndjson")
	// Headers now: the first update may be deferred (FirstUpdateWait).
	w.WriteHeader(http.StatusOK)
	fl.Flush()
	st := &stream{node: node, confirmer: s.Confirmer, maxHeld: s.maxHeld(),
		early: s.Early && r.URL.Query().Get(state.EarlyParam) == "1"}
	// A module that asks has its updates numbered (applied.go).
	var numbered *seqStream
	if r.URL.Query().Get(state.SeqParam) == "1" {
		numbered = s.seqs.open(node)
		defer s.seqs.close(numbered)
	}
	var last uint64
	first, withheld, lastN, lastIdx := true, 0, 0, 0
	// bound is the first update's deferral (see FirstUpdateWait): nil
	// until that update is first withheld, and after it fired.
	var bound clock.Timer
	var boundC <-chan time.Time
	// Only a module that keeps a last state (state.ResumeParam) is better
	// served by waiting; a fresh one gets what is confirmed at once.
	expired := s.firstWait() == 0 || r.URL.Query().Get(state.ResumeParam) != "1"
	defer func() {
		if bound != nil {
			bound.Stop()
		}
	}()
	for {
		ch := s.Registry.Changed()
		var acks <-chan struct{}
		if s.Confirmer != nil {
			acks = s.Confirmer.Changed()
		}
		if s.Envoys == nil {
			members = s.fleet.changed()
		}
		snap := s.Registry.Snapshot()
		n, idx := envoys(node)
		if first || snap.Version != last || withheld > 0 || n != lastN || idx != lastIdx {
			lastN, lastIdx = n, idx
			b, changed, held, err := st.next(snap, n, idx, first)
			if err != nil {
				s.logger().Error("activator module state", zap.Error(err))
				return
			}
			last, withheld = snap.Version, held
			if first && held > 0 && !expired {
				// Deferred: the module keeps its last state until this
				// node ACKs or the bound passes.
				if bound == nil {
					bound = s.clock().NewTimer(s.firstWait())
					boundC = bound.C()
				}
			} else {
				if first && held > 0 && bound != nil {
					s.logger().Info("activator module state: first update sent before this Envoy ACKed every backend",
						zap.String("node", node), zap.Int("withheld", held), zap.Duration("waited", s.firstWait()))
				}
				if first || changed {
					if numbered != nil {
						b = withSeq(b, s.seqs.sent(numbered, snap.Version))
					}
					if _, err := w.Write(b); err != nil {
						return
					}
					fl.Flush()
				} else if numbered != nil {
					s.seqs.unchanged(numbered, snap.Version)
				}
				first, boundC = false, nil
			}
		}
		if withheld == 0 {
			acks = nil // nothing waits for an ACK
		}
		select {
		case <-ch:
		case <-acks:
		case <-members:
		case <-boundC:
			expired, boundC = true, nil
		case <-r.Context().Done():
			return
		}
	}
}

func (s *Server) serveReport(w http.ResponseWriter, r *http.Request) {
	b, err := io.ReadAll(io.LimitReader(r.Body, state.MaxReportBytes+1))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	rep, err := state.DecodeReport(b)
	if err != nil {
		s.logger().Warn("activator module report refused", zap.Error(err))
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if err := s.apply(rep); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// WakeCounter takes wake policy answers (extproc.Server implements it,
// so both activators count into the same metrics).
type WakeCounter interface {
	// CountWakeAnswers adds n answers of revision key's rule (page false)
	// or waiting page (page true).
	CountWakeAnswers(key revision.Key, rule string, page bool, n int64)
}

// apply records held counts, pokes and wake answers.
func (s *Server) apply(rep *state.Report) error {
	now := time.Now
	if s.Now != nil {
		now = s.Now
	}
	t := now()
	for _, c := range rep.Revisions {
		key, err := revision.ParseKey(c.Key)
		if err != nil {
			return fmt.Errorf("modsvc: %w", err)
		}
		if s.Recorder != nil {
			s.Recorder.Record(autoscaler.Sample{Revision: key, Source: "module/" + rep.Node, Time: t, Concurrency: float64(c.Held + c.Early)})
		}
	}
	for _, k := range rep.Pokes {
		key, err := revision.ParseKey(k)
		if err != nil {
			return fmt.Errorf("modsvc: %w", err)
		}
		if s.Poker != nil {
			s.Poker.Poke(key)
		}
	}
	s.reported.set(rep.Node, t, rep.Revisions)
	if rep.Applied != 0 {
		s.seqs.confirm(rep.Node, rep.Applied)
	}
	s.countWake(rep.Wake)
	if rep.HeldLimit > 0 {
		s.logger().Warn("activator module refused requests at its held bound: Envoy's open-file limit is reached (raise it with --envoy-open-files)",
			zap.String("node", rep.Node), zap.Int64("refused", rep.HeldLimit), zap.Int64("maxHeld", s.maxHeld()))
		if s.HeldLimitCounter != nil {
			s.HeldLimitCounter.CountHeldLimit(rep.HeldLimit)
		}
	}
	return nil
}

// HeldLimitCounter takes the requests modules refused at their held
// bound (extproc.Server implements it: the same held_limit outcome).
type HeldLimitCounter interface {
	// CountHeldLimit adds n refusals.
	CountHeldLimit(n int64)
}

// maxHeld is the held bound sent to modules (0: none).
func (s *Server) maxHeld() int64 {
	if s.MaxHeld == nil {
		return 0
	}
	return int64(max(s.MaxHeld(), 0))
}

// countWake passes wake answers on, only for revisions and rules of the
// current configuration (a report names what it likes; metric labels stay
// bounded by the configuration).
func (s *Server) countWake(counts []state.WakeCount) {
	if s.WakeCounter == nil || len(counts) == 0 {
		return
	}
	snap := s.Registry.Snapshot()
	for _, c := range counts {
		key, err := revision.ParseKey(c.Key)
		if err != nil {
			continue
		}
		rev := snap.Get(key)
		if rev == nil || rev.Spec.Wake == nil {
			continue
		}
		if c.Page {
			if rev.Spec.Wake.Page != nil {
				s.WakeCounter.CountWakeAnswers(key, "", true, c.Count)
			}
			continue
		}
		for _, r := range rev.Spec.Wake.Rules {
			if r.Name == c.Rule {
				s.WakeCounter.CountWakeAnswers(key, c.Rule, false, c.Count)
				break
			}
		}
	}
}
