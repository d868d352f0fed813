package app

import (
	"errors"
	"fmt"
	"net"
	"syscall"
)

// ListenPort is an address something will listen on and the command-line
// flag that sets it, so a conflict can say what to change.
type ListenPort struct {
	// Address is "host:port".
	Address string
	// Flag is the flag that changes it, e.g. "--http-port".
	Flag string
}

// PortInUseError says that an address thaw (or the Envoy it starts) needs
// is taken by another process. errors.Is(err, syscall.EADDRINUSE) holds.
type PortInUseError struct {
	ListenPort
	// Err is the underlying error (bind: address already in use, or
	// Envoy's own message).
	Err error
}

// Error returns "ADDR is already in use (another thaw or another program
// listens there): choose another with FLAG: cause".
func (e *PortInUseError) Error() string {
	return fmt.Sprintf("%s is already in use (another thaw or another program listens there): choose another with %s: %v",
		e.Address, e.Flag, e.Err)
}

// Unwrap returns the underlying error.
func (e *PortInUseError) Unwrap() error { return e.Err }

// Is makes errors.Is(err, syscall.EADDRINUSE) hold even when Err is
// Envoy's message rather than an errno.
func (e *PortInUseError) Is(target error) bool { return target == syscall.EADDRINUSE }

// CheckPortsFree binds and closes each address in turn and returns a
// *PortInUseError for the first one taken (other bind errors are wrapped
// with the address and flag). Envoy binds its ports after start-up, where
// a conflict would only show as a rejected listener or an exit; checking
// first names the flag at once.
func CheckPortsFree(ports ...ListenPort) error {
	for _, p := range ports {
		ln, err := net.Listen("tcp", p.Address)
		if err != nil {
			return listenError(p, err)
		}
		_ = ln.Close()
	}
	return nil
}

// listen is net.Listen with listenError's errors.
func listen(p ListenPort) (net.Listener, error) {
	ln, err := net.Listen("tcp", p.Address)
	if err != nil {
		return nil, listenError(p, err)
	}
	return ln, nil
}

// listenError names the flag of a failed listen: a *PortInUseError when
// the address is taken.
func listenError(p ListenPort, err error) error {
	if errors.Is(err, syscall.EADDRINUSE) {
		return &PortInUseError{ListenPort: p, Err: err}
	}
	return fmt.Errorf("listen on %s (%s): %w", p.Address, p.Flag, err)
}
