package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"

	"github.com/thaw-dev/thaw/internal/app"
	"github.com/thaw-dev/thaw/xds"
	"github.com/thaw-dev/thaw/xds/translate"
)

// firstAckTimeout is how long `thaw local` waits for Envoy to acknowledge
// its first configuration before it logs that Envoy did not.
const firstAckTimeout = 60 * time.Second

// startPoll is how often the start-up watch reads Envoy's rejections.
const startPoll = 100 * time.Millisecond

// errNoFirstAck: Envoy neither acknowledged nor rejected the first
// configuration within firstAckTimeout (logged; thaw keeps running).
var errNoFirstAck = errors.New("envoy did not acknowledge the first configuration")

// envoyPorts are the ports the Envoy of `thaw local` binds, with their
// flags, checked before it starts.
func envoyPorts(f *localFlags) []app.ListenPort {
	return []app.ListenPort{
		{Address: httpListenAddress(f), Flag: "--http-port"},
		{Address: net.JoinHostPort("127.0.0.1", strconv.Itoa(f.envoyAdminPort)), Flag: "--envoy-admin-port"},
	}
}

func httpListenAddress(f *localFlags) string {
	return net.JoinHostPort(f.httpAddress, strconv.Itoa(f.httpPort))
}

// watchStart waits until Envoy acknowledged the first configuration. It
// fails at once when Envoy rejects the HTTP listener (a *app.PortInUseError
// naming --http-port when the port is taken) or exits first, so a
// mistake ends `thaw local` within seconds instead of leaving it waiting
// forever. It returns errNoFirstAck after firstAckTimeout.
func watchStart(ctx context.Context, x *xds.Server, proc *app.EnvoyProcess, f *localFlags) error {
	wctx, cancel := context.WithTimeout(ctx, firstAckTimeout)
	defer cancel()
	acked := make(chan error, 1)
	go func() { acked <- x.WaitFirstAck(wctx) }()
	tick := time.NewTicker(startPoll)
	defer tick.Stop()
	for {
		select {
		case err := <-acked:
			select {
			case <-proc.Done(): // Envoy's exit canceled ctx: say why
				return fmt.Errorf("%w: %w", app.ErrEnvoyExited, proc.ExitError())
			default:
			}
			if err != nil && ctx.Err() == nil {
				return fmt.Errorf("%w within %s", errNoFirstAck, firstAckTimeout)
			}
			return err
		case <-proc.Done():
			return fmt.Errorf("%w: %w", app.ErrEnvoyExited, proc.ExitError())
		case <-tick.C:
			if err := listenerRejected(x, f); err != nil {
				return err
			}
		}
	}
}

// listenerRejected returns why Envoy rejected listener thaw_http, if it
// did.
func listenerRejected(x *xds.Server, f *localFlags) error {
	for _, n := range x.Nodes() {
		for _, nk := range n.NACKs {
			if nk.TypeURL != resourcev3.ListenerType || !containsName(nk.Resources, translate.HTTPListenerName) {
				continue
			}
			cause := fmt.Errorf("envoy rejected listener %s: %s", translate.HTTPListenerName, nk.Message)
			if strings.Contains(strings.ToLower(nk.Message), "address already in use") {
				return &app.PortInUseError{ListenPort: app.ListenPort{Address: httpListenAddress(f), Flag: "--http-port"}, Err: cause}
			}
			return cause
		}
	}
	return nil
}

func containsName(names []string, name string) bool {
	for _, n := range names {
		if n == name {
			return true
		}
	}
	return false
}
