package main

import (
	"log"
	"net/http"
	"time"

	"github.com/gorilla/websocket"
)

// WebSocketPath is where the workload accepts WebSocket upgrades: it echoes
// every message back, prefixed with nothing, and counts the connection as
// one request in flight for its whole life.
const WebSocketPath = "/ws"

// upgrader accepts any origin: the example runs behind thaw on loopback.
var upgrader = websocket.Upgrader{CheckOrigin: func(*http.Request) bool { return true }}

// serveWebSocket upgrades the request and echoes messages until the client
// closes or the server shuts down (then it sends a close frame).
func (s *server) serveWebSocket(w http.ResponseWriter, r *http.Request) {
	conn, err := upgrader.Upgrade(w, r, nil)
	if err != nil {
		return // Upgrade already answered with an HTTP error
	}
	defer conn.Close()
	done := s.track()
	defer done()
	closed := make(chan struct{})
	defer close(closed)
	go func() {
		select {
		case <-s.stopping:
			_ = conn.WriteControl(websocket.CloseMessage,
				websocket.FormatCloseMessage(websocket.CloseGoingAway, "server shutting down"), time.Now().Add(time.Second))
			_ = conn.Close()
		case <-closed:
		}
	}()
	for {
		kind, msg, err := conn.ReadMessage()
		if err != nil {
			if !websocket.IsCloseError(err, websocket.CloseNormalClosure, websocket.CloseGoingAway) {
				log.Printf("websocket: %v", err)
			}
			return
		}
		if err := conn.WriteMessage(kind, msg); err != nil {
			return
		}
	}
}
