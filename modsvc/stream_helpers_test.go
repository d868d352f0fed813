package modsvc

import (
	"bufio"
	"io"
	"testing"

	"github.com/thaw-dev/thaw/module/state"
)

// updateReader reads a state stream's body (one JSON update per line,
// as a module reads it) and returns a function that gives the next
// update, failing the test when the stream ends or a line does not
// decode. The caller closes the body before the server.
func updateReader(t *testing.T, body io.Reader) func() *state.Update {
	sc := bufio.NewScanner(body)
	sc.Buffer(nil, state.MaxMessageBytes)
	return func() *state.Update {
		t.Helper()
		if !sc.Scan() {
			t.Fatalf("stream ended: %v", sc.Err())
		}
		u, err := state.DecodeUpdate(sc.Bytes())
		if err != nil {
			t.Fatalf("invalid update %q: %v", sc.Bytes(), err)
		}
		return u
	}
}
