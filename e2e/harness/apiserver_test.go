package harness

import (
	"errors"
	"fmt"
	"testing"
)

func TestStartOnFreePorts(t *testing.T) {
	other := errors.New("boom")
	cases := []struct {
		name      string
		results   []error // what start returns, call by call
		wantCalls int
		wantErr   error
	}{
		{"first try", []error{nil}, 1, nil},
		{"port taken twice, then bound", []error{errPortTaken, fmt.Errorf("etcd: %w", errPortTaken), nil}, 3, nil},
		{"other failure is not retried", []error{other}, 1, other},
		{"always taken: gives up", []error{errPortTaken, errPortTaken, errPortTaken, errPortTaken, nil}, bindAttempts, errPortTaken},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			calls := 0
			err := startOnFreePorts(func() error {
				calls++
				return c.results[calls-1]
			})
			if calls != c.wantCalls {
				t.Errorf("start called %d times, want %d", calls, c.wantCalls)
			}
			if (c.wantErr == nil) != (err == nil) || (c.wantErr != nil && !errors.Is(err, c.wantErr)) {
				t.Errorf("error %v, want %v", err, c.wantErr)
			}
		})
	}
}
