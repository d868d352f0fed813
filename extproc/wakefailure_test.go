package extproc

import (
	"strings"
	"testing"
	"time"

	"github.com/thaw-dev/thaw/activator"
	"github.com/thaw-dev/thaw/revision"
)

func TestWakeFailedAnswer(t *testing.T) {
	e := &activator.WakeFailedError{Key: revision.Key{Namespace: "local", Name: "crash"},
		Failure:    revision.WakeFailure{Reason: "Process Exited\n", Message: "crash-1: exit status 3\nsecret\x00" + strings.Repeat("x", 1000)},
		RetryAfter: 1500 * time.Millisecond}
	resp, err := wakeFailed(e)
	if err != nil {
		t.Fatal(err)
	}
	ir := resp.GetImmediateResponse()
	if ir.GetStatus().GetCode() != 503 {
		t.Fatalf("status %v, want 503", ir.GetStatus().GetCode())
	}
	hdr := map[string]string{}
	for _, h := range ir.GetHeaders().GetSetHeaders() {
		hdr[h.GetHeader().GetKey()] = string(h.GetHeader().GetRawValue())
	}
	if hdr["retry-after"] != "2" || hdr[WakeFailureHeader] != "ProcessExited" {
		t.Fatalf("headers %v, want retry-after 2 (rounded up) and %s ProcessExited (letters only)", hdr, WakeFailureHeader)
	}
	body := string(ir.GetBody())
	if !strings.HasPrefix(body, "revision local/crash could not be woken: Process Exited: crash-1: exit status 3 secret") ||
		strings.Count(body, "\n") != 1 || !strings.HasSuffix(body, "...\n") || len(body) > 700 || strings.Contains(body, "\x00") {
		t.Fatalf("body %q: want one line naming revision, reason and message, cut", body)
	}
	if ir.GetDetails() != "thaw_activator_wake_failed" {
		t.Fatalf("details %q", ir.GetDetails())
	}
}
