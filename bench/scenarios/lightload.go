package main

import (
	"fmt"
	"net/http"
	"sync"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"
)

// lightLoad is a constant-rate vegeta attack spread over some revisions,
// running until stopped.
type lightLoad struct {
	atk  *vegeta.Attacker
	done chan struct{}

	mu       sync.Mutex
	requests int64
	errors   int64
	first    string
	stopped  bool
}

// startLightLoad sends rps requests/s in all, round robin over revs'
// hosts, through baseURL.
func startLightLoad(baseURL string, revs []rev, rps int) *lightLoad {
	tgts := make([]vegeta.Target, len(revs))
	for i, r := range revs {
		tgts[i] = vegeta.Target{Method: http.MethodGet, URL: baseURL + "/", Header: http.Header{"Host": []string{r.host()}}}
	}
	l := &lightLoad{done: make(chan struct{})}
	l.atk = vegeta.NewAttacker(vegeta.Workers(4), vegeta.MaxBody(0), vegeta.Timeout(30*time.Second))
	go func() {
		defer close(l.done)
		for res := range l.atk.Attack(vegeta.NewStaticTargeter(tgts...), vegeta.Rate{Freq: rps, Per: time.Second}, 0, "light") {
			l.mu.Lock()
			l.requests++
			if res.Error != "" || res.Code != http.StatusOK {
				l.errors++
				if l.first == "" {
					l.first = fmt.Sprintf("%d %s", res.Code, res.Error)
				}
			}
			l.mu.Unlock()
		}
	}()
	return l
}

// stop ends the attack (once) and returns the requests sent and failed.
func (l *lightLoad) stop() (requests, errors int64) {
	l.mu.Lock()
	stopped := l.stopped
	l.stopped = true
	l.mu.Unlock()
	if !stopped {
		l.atk.Stop()
		select {
		case <-l.done:
		case <-time.After(time.Minute):
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.requests, l.errors
}

func (l *lightLoad) firstError() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.first
}
