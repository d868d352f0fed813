package extproc

import (
	"errors"
	"fmt"
	"strings"
	"unicode"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/service/ext_proc/v3"
	typev3 "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"go.uber.org/zap"

	"github.com/thaw-dev/thaw/activator"
	"github.com/thaw-dev/thaw/revision"
)

// WakeFailureHeader names the reason of a failed wake-up
// (revision.WakeFailure.Reason, e.g. "ProcessExited", "ImagePullBackOff")
// on the 503 the activator answers while the failure lasts.
const WakeFailureHeader = "x-thaw-wake-failure"

// outcomeWakeFailed labels answers to requests for a revision whose wake-up
// failed (503 + Retry-After, see activator.ErrWakeFailed).
const outcomeWakeFailed = "wake_failed"

// maxWakeMessage bounds the platform's message in the answer's body
// (bytes).
const maxWakeMessage = 512

// wakeFailed builds the 503 for a failed wake-up: Retry-After until the
// platform's next attempt, WakeFailureHeader with the reason, and a body
// naming the revision, the reason and the platform's message. Built per
// answer (the message varies); these answers are rare.
func wakeFailed(e *activator.WakeFailedError) (*extprocv3.ProcessingResponse, error) {
	msg := sanitizeLine(e.Failure.Message, maxWakeMessage)
	body := fmt.Sprintf("revision %s could not be woken: %s", e.Key, sanitizeLine(e.Failure.Reason, 64))
	if msg != "" {
		body += ": " + msg
	}
	resp := immediate(typev3.StatusCode_ServiceUnavailable, outcomeWakeFailed, body+"\n", e.RetryAfter)
	ir := resp.GetImmediateResponse()
	ir.Headers.SetHeaders = append(ir.Headers.SetHeaders, &corev3.HeaderValueOption{
		Header:       &corev3.HeaderValue{Key: WakeFailureHeader, RawValue: []byte(headerToken(e.Failure.Reason))},
		AppendAction: corev3.HeaderValueOption_OVERWRITE_IF_EXISTS_OR_ADD,
	})
	if err := resp.ValidateAll(); err != nil {
		return nil, fmt.Errorf("extproc: invalid wake failure reply: %w", err)
	}
	return resp, nil
}

// answerWakeFailed answers an activator.ErrWakeFailed (see wakeFailed);
// the plain hold-timeout 503 if the answer cannot be built.
func (s *Server) answerWakeFailed(stream extprocv3.ExternalProcessor_ProcessServer, key revision.Key, err error) error {
	var we *activator.WakeFailedError
	if errors.As(err, &we) {
		resp, rerr := wakeFailed(we)
		if rerr == nil {
			return s.answer(stream, resp, outcomeWakeFailed)
		}
		err = rerr
	}
	s.log.Error("wake failure answer", zap.String("revision", key.String()), zap.Error(err))
	return s.answer(stream, s.answers.holdTimeout, outcomeHoldTimeout)
}

// sanitizeLine keeps the printable characters of s on one line, cut to at
// most limit bytes.
func sanitizeLine(s string, limit int) string {
	s = strings.Map(func(r rune) rune {
		switch {
		case r == '\n' || r == '\r' || r == '\t':
			return ' '
		case !unicode.IsPrint(r):
			return -1
		}
		return r
	}, s)
	s = strings.TrimSpace(s)
	if len(s) > limit {
		s = strings.ToValidUTF8(s[:limit], "") + "..."
	}
	return s
}

// headerToken keeps the letters and digits of a reason (a header value
// Envoy accepts whatever the platform wrote), "Unknown" if none remain.
func headerToken(s string) string {
	s = strings.Map(func(r rune) rune {
		if r < 128 && (unicode.IsLetter(r) || unicode.IsDigit(r)) {
			return r
		}
		return -1
	}, s)
	if len(s) > 64 {
		s = s[:64]
	}
	if s == "" {
		return "Unknown"
	}
	return s
}
