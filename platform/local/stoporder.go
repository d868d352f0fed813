package local

import (
	"context"
	"net"
	"strconv"
	"time"

	"go.uber.org/zap"

	"github.com/thaw-dev/thaw/revision"
)

// loadTimeout bounds one LoadSource call on a scale-down.
const loadTimeout = time.Second

// stopCandidate is what choosing an instance to stop looks at.
type stopCandidate struct {
	ready bool
	// inFlight is the instance's requests in flight (or connections, when
	// no LoadSource answered).
	inFlight int
	seq      int
}

// stopBefore orders instances for a scale-down: a negative result means a
// is stopped before b. Not-ready instances go first (they serve nothing),
// then the least busy (fewer requests in flight: fewer long requests to
// wait for, and none cut when the drain timeout ends), then the newest
// (highest seq), which keeps the longest-running, warmest processes.
func stopBefore(a, b stopCandidate) int {
	if a.ready != b.ready {
		if a.ready {
			return 1
		}
		return -1
	}
	if a.inFlight != b.inFlight {
		return a.inFlight - b.inFlight
	}
	return b.seq - a.seq
}

// hostPort is the backend address of a local port.
func hostPort(port int32) string { return net.JoinHostPort(loopback, strconv.Itoa(int(port))) }

// loadForScaleDown returns how busy each live instance of key is, by port,
// when replicas is below its count of instances not being stopped and
// above zero; nil otherwise (nothing to choose: none or every instance
// stops) or when nothing could be measured. It asks Options.Load, and
// falls back to counting established connections. Options.Load is Envoy's
// admin /clusters, which walks every cluster on Envoy's main thread (20-60
// ms at 10,000 revisions), delaying every xDS update behind it; a scale to
// zero, the most frequent scale-down, does not ask.
func (p *Platform) loadForScaleDown(ctx context.Context, key revision.Key, replicas int32) map[int32]int {
	p.mu.Lock()
	rs := p.revMap()[key]
	var ports []int32
	active := 0
	if rs != nil {
		for _, in := range rs.instances {
			if in.stopping {
				continue
			}
			active++
			if in.port != 0 {
				ports = append(ports, in.port)
			}
		}
	}
	p.mu.Unlock()
	if rs == nil || replicas <= 0 || active <= int(replicas) || len(ports) == 0 {
		return nil
	}
	if p.opts.Load != nil {
		lctx, cancel := context.WithTimeout(ctx, loadTimeout)
		byAddr, err := p.opts.Load.Load(lctx, key)
		cancel()
		if err == nil {
			load := make(map[int32]int, len(ports))
			for _, port := range ports {
				load[port] = byAddr[hostPort(port)].Requests
			}
			return load
		}
		rs.log().Info("requests in flight per backend unknown; ranking by connections", zap.Error(err))
	}
	load, err := establishedConns(ports, p.probeConns)
	if err != nil {
		rs.log().Warn("connections per backend unknown; stopping the newest", zap.Error(err))
		return nil
	}
	return load
}
