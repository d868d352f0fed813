package main

import (
	"fmt"
	"net/http"
	"strconv"
	"time"
)

// maxStreamEvents bounds GET /stream?events=N.
const maxStreamEvents = 100000

// serveStream answers GET /stream?events=N&interval=D with a server-sent
// events stream: headers at once (X-Workload-Port and X-Workload-Pid name
// the instance), then N events ("data: <i> of <N> port=<port>", i from 1),
// one every D (default 1s), each flushed, and a final "event: end". It
// counts as one request in flight for its whole life. Bad parameters: 400.
func (s *server) serveStream(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	events, interval := 10, time.Second
	if v := q.Get("events"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n > maxStreamEvents {
			http.Error(w, fmt.Sprintf("events: want an integer 0..%d", maxStreamEvents), http.StatusBadRequest)
			return
		}
		events = n
	}
	if v := q.Get("interval"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			http.Error(w, "interval: want a duration such as 500ms", http.StatusBadRequest)
			return
		}
		interval = d
	}
	flusher, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming unsupported", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("X-Workload-Port", strconv.Itoa(s.port))
	w.Header().Set("X-Workload-Pid", strconv.Itoa(s.pid))
	w.WriteHeader(http.StatusOK)
	flusher.Flush()
	t := time.NewTicker(max(interval, time.Microsecond))
	defer t.Stop()
	for i := 1; i <= events; i++ {
		if interval > 0 {
			select {
			case <-t.C:
			case <-r.Context().Done():
				return
			}
		}
		if _, err := fmt.Fprintf(w, "data: %d of %d port=%d\n\n", i, events, s.port); err != nil {
			return
		}
		flusher.Flush()
	}
	fmt.Fprint(w, "event: end\ndata: done\n\n")
}
