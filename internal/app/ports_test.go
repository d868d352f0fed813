package app

import (
	"errors"
	"net"
	"strings"
	"syscall"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/thaw-dev/thaw/activator"
	"github.com/thaw-dev/thaw/revision"
	"github.com/thaw-dev/thaw/xds/translate"
)

func TestCheckPortsFreeNamesTheFlag(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	free, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	freeAddr := free.Addr().String()
	free.Close()

	if err := CheckPortsFree(ListenPort{Address: freeAddr, Flag: "--a"}); err != nil {
		t.Fatalf("free port: %v", err)
	}
	err = CheckPortsFree(ListenPort{Address: freeAddr, Flag: "--a"}, ListenPort{Address: ln.Addr().String(), Flag: "--http-port"})
	var pe *PortInUseError
	if !errors.As(err, &pe) || pe.Flag != "--http-port" || !errors.Is(err, syscall.EADDRINUSE) {
		t.Fatalf("err = %v, want a *PortInUseError for --http-port", err)
	}
	if msg := err.Error(); !strings.HasPrefix(msg, ln.Addr().String()+" is already in use") || !strings.Contains(msg, "choose another with --http-port") {
		t.Fatalf("message %q", msg)
	}
	// Envoy's own message (not an errno) still matches EADDRINUSE.
	envoyErr := &PortInUseError{ListenPort: ListenPort{Address: "127.0.0.1:8080", Flag: "--http-port"}, Err: errors.New("cannot bind")}
	if !errors.Is(envoyErr, syscall.EADDRINUSE) {
		t.Fatal("PortInUseError is not EADDRINUSE")
	}
}

func TestNewNamesTheBusyGRPCAndAdminFlags(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	for _, tt := range []struct{ grpc, admin, flag string }{
		{ln.Addr().String(), "127.0.0.1:0", "--grpc-address"},
		{"127.0.0.1:0", ln.Addr().String(), "--admin-address"},
	} {
		_, err := New(Options{Registry: revision.NewRegistry(revision.RegistryOptions{}), XDS: translate.DefaultConfig(),
			NewPlatform: func(*activator.Activator, prometheus.Registerer) (Platform, error) { return erroringPlatform{}, nil },
			GRPCAddress: tt.grpc, AdminAddress: tt.admin})
		var pe *PortInUseError
		if !errors.As(err, &pe) || pe.Flag != tt.flag {
			t.Errorf("New with %s busy: err = %v, want a *PortInUseError naming %s", tt.flag, err, tt.flag)
		}
	}
}
