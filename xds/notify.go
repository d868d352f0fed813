package xds

import "sync"

// notifier wakes waiters on any change: a waiter takes the channel, checks
// its condition, then waits on the channel, which is closed and replaced on
// the next change, so no change between check and wait is missed.
type notifier struct {
	mu sync.Mutex
	ch chan struct{}
}

func newNotifier() *notifier { return &notifier{ch: make(chan struct{})} }

// wait returns the channel the next broadcast closes.
func (n *notifier) wait() <-chan struct{} {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.ch
}

// broadcast wakes every waiter.
func (n *notifier) broadcast() {
	n.mu.Lock()
	defer n.mu.Unlock()
	close(n.ch)
	n.ch = make(chan struct{})
}
