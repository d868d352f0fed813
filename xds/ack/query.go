package ack

// AckedEverywhere reports whether at least one stream holds the named
// resource and every such stream has ACKed version with nothing newer in
// flight for it. Streams count once they were sent the resource or
// reported holding it (subscribed to it): one that never subscribed does
// not route with it, and will be sent the current version when it does.
// Streams thaw closed as stalled (excluded) do not count (Stalled).
func (t *Tracker) AckedEverywhere(typeURL, name, version string) bool {
	t.mu.RLock()
	defer t.mu.RUnlock()
	counted := 0
	for _, s := range t.holders[typeURL][name] {
		if s.excluded {
			continue
		}
		if !s.ackedCurrent(typeURL, name, version) {
			return false
		}
		counted++
	}
	return counted > 0
}

// HeldAnywhere reports whether a stream (not excluded) holds the named
// resource: ACKed it, or has a response carrying or removing it in flight.
func (t *Tracker) HeldAnywhere(typeURL, name string) bool {
	t.mu.RLock()
	defer t.mu.RUnlock()
	for _, s := range t.holders[typeURL][name] {
		if !s.excluded {
			return true
		}
	}
	return false
}

// holds reports whether the stream was sent, or reported holding, the
// named resource (it subscribed to it).
func (s *streamState) holds(typeURL, name string) bool {
	if _, ok := s.acked[typeURL][name]; ok {
		return true
	}
	return s.pending[typeURL][name] > 0
}

func (s *streamState) ackedCurrent(typeURL, name, version string) bool {
	return s.acked[typeURL][name] == version && s.pending[typeURL][name] == 0
}

// AllAcked reports whether every stream that subscribed to typeURL (ACKed
// something of it) has ACKed each name at its version, or gave up waiting
// because it no longer exists. Streams that have not reached typeURL yet
// will receive the current state anyway and are not waited for.
func (t *Tracker) AllAcked(typeURL string, want map[string]string) bool {
	t.mu.RLock()
	defer t.mu.RUnlock()
	for _, s := range t.streams {
		if s.excluded || (len(s.acked[typeURL]) == 0 && len(s.pending[typeURL]) == 0) {
			continue
		}
		for n, v := range want {
			if !s.ackedCurrent(typeURL, n, v) {
				return false
			}
		}
	}
	return true
}

// AckedByHolders reports whether every stream holding a name of want
// (sent it, or reported holding it) has ACKed it at its version with
// nothing newer in flight: for resources served on demand, which a stream
// that never fetched them is not sent.
func (t *Tracker) AckedByHolders(typeURL string, want map[string]string) bool {
	t.mu.RLock()
	defer t.mu.RUnlock()
	for n, v := range want {
		for _, s := range t.holders[typeURL][n] {
			if !s.excluded && !s.ackedCurrent(typeURL, n, v) {
				return false
			}
		}
	}
	return true
}

// AllAckedWithParent is AllAcked for a type whose resources each belong
// to a parent resource of the same name in parentType (a
// ClusterLoadAssignment and its cluster): a stream that holds the parent
// must ACK the child as well, even before it has subscribed to anything
// of typeURL. Envoy subscribes to a new EDS cluster's assignment only
// while it warms the cluster, so a stream whose first cluster this is may
// ACK the cluster before its assignment request arrives; AllAcked would
// not wait for it then.
func (t *Tracker) AllAckedWithParent(typeURL string, want map[string]string, parentType string) bool {
	t.mu.RLock()
	defer t.mu.RUnlock()
	for _, s := range t.streams {
		if s.excluded {
			continue
		}
		follows := len(s.acked[typeURL]) > 0 || len(s.pending[typeURL]) > 0
		for n, v := range want {
			if !follows && !s.holds(parentType, n) {
				continue
			}
			if !s.ackedCurrent(typeURL, n, v) {
				return false
			}
		}
	}
	return true
}

// AllRemoved reports whether every stream that subscribed to typeURL has
// ACKed the removal of each of names (holds none of them, with nothing
// in flight for them).
func (t *Tracker) AllRemoved(typeURL string, names []string) bool {
	t.mu.RLock()
	defer t.mu.RUnlock()
	for _, s := range t.streams {
		if s.excluded || (len(s.acked[typeURL]) == 0 && len(s.pending[typeURL]) == 0) {
			continue
		}
		for _, n := range names {
			if s.holds(typeURL, n) {
				return false
			}
		}
	}
	return true
}

// Covers reports whether stream k has ACKed some version of every name in
// want (type URL → names).
func (t *Tracker) Covers(k StreamKey, want map[string]map[string]string) bool {
	t.mu.RLock()
	defer t.mu.RUnlock()
	s := t.streams[k]
	if s == nil {
		return false
	}
	for typ, names := range want {
		a := s.acked[typ]
		if len(a) < len(names) {
			return false
		}
	}
	for typ, names := range want {
		a := s.acked[typ]
		for n := range names {
			if _, ok := a[n]; !ok {
				return false
			}
		}
	}
	return true
}

// AckedType reports whether stream k has ACKed any response of typeURL
// (an empty one too).
func (t *Tracker) AckedType(k StreamKey, typeURL string) bool {
	t.mu.RLock()
	defer t.mu.RUnlock()
	s := t.streams[k]
	return s != nil && s.acked[typeURL] != nil
}

// Keys returns the keys of the connected streams.
func (t *Tracker) Keys() []StreamKey {
	t.mu.RLock()
	defer t.mu.RUnlock()
	out := make([]StreamKey, 0, len(t.streams))
	for k := range t.streams {
		out = append(out, k)
	}
	return out
}

// Count returns the number of connected streams.
func (t *Tracker) Count() int {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return len(t.streams)
}

// AckedBy reports whether node holds at least one stream (not excluded)
// with the named resource, and every such stream ACKed version with
// nothing newer in flight.
func (t *Tracker) AckedBy(node, typeURL, name, version string) bool {
	t.mu.RLock()
	defer t.mu.RUnlock()
	counted := 0
	for _, s := range t.holders[typeURL][name] {
		if s.excluded || s.nodeID != node {
			continue
		}
		if !s.ackedCurrent(typeURL, name, version) {
			return false
		}
		counted++
	}
	return counted > 0
}
