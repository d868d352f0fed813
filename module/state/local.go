package state

// Releases prefer a request held on the releasing worker.
//
// A held request is resumed by committing its Envoy filter scheduler,
// which posts to the dispatcher of the worker that holds the request.
// When that is another worker the post wakes it (an eventfd write, the
// other thread out of epoll_wait, a context switch); on the releasing
// worker itself it runs at the end of the current event-loop pass with no
// system call. So a slot freed on a worker goes to the oldest request
// held on that same worker when one waits near the head of the queue,
// else to the oldest held request, as before (docs/activator.md, *Where
// the module path's extra Envoy CPU goes*).
//
// Fairness stays bounded: a release looks at most LocalWindow entries
// past the head, never past a request waiting for a state update, and a
// held request is overtaken by at most MaxOvertaken younger requests;
// after that it is granted the next slot whatever worker frees it. A
// worker that frees no slot (all of a revision's in-flight requests run
// on other workers) therefore still has its requests granted, each after
// at most MaxOvertaken others.

// NoWorker marks a hold or a release with no worker to prefer (a state
// update, the sweep, a caller that does not say).
const NoWorker int32 = -1

const (
	// LocalWindow is how many queue entries past the head a release
	// looks at for a request held on its own worker.
	LocalWindow = 8
	// MaxOvertaken is how many younger requests may be granted before a
	// held request.
	MaxOvertaken = 4
)

// HoldNotifyOn is HoldNotify for a request held on Envoy worker worker
// (0 and up; NoWorker: none), which a release on the same worker prefers
// (ReleaseOn).
func (r *Revision) HoldNotifyOn(n Notifier, worker int32) (*Waiter, error) {
	return r.hold(n, false, worker)
}

// ReleaseOn is Release from Envoy worker worker: the freed slot goes to
// the oldest request held on that worker when one waits within
// LocalWindow of the head and no older request was overtaken
// MaxOvertaken times, else to the oldest held request.
func (r *Revision) ReleaseOn(b *Backend, worker int32) {
	b.release()
	r.inFlight.Add(-1)
	if r.held.Load() > 0 {
		r.dispatchOn(worker)
	}
}

// localLocked returns the oldest waiting request held on worker within
// LocalWindow of the head, and counts the older waiting requests it
// overtakes; nil when there is none, or when it would overtake a request
// waiting for an update or one already overtaken MaxOvertaken times
// (r.mu held).
func (r *Revision) localLocked(worker int32) *Waiter {
	end := min(len(r.queue), r.head+LocalWindow)
	updates := r.updates.Load()
	for i := r.head; i < end; i++ {
		w := r.queue[i]
		if w == nil || w.state != Waiting {
			continue
		}
		if w.worker == worker {
			for _, o := range r.queue[r.head:i] {
				if o != nil && o.state == Waiting {
					o.overtaken++
				}
			}
			return w
		}
		if w.notBefore > updates || w.overtaken >= MaxOvertaken {
			return nil
		}
	}
	return nil
}
