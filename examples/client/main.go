package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"

	"github.com/gorilla/websocket"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	testpb "google.golang.org/grpc/interop/grpc_testing"
)

func main() {
	if len(os.Args) < 2 || (os.Args[1] != "ws" && os.Args[1] != "grpc") {
		fmt.Fprintln(os.Stderr, "usage: client ws|grpc [--addr host:port] [--host name] [--n messages]")
		os.Exit(2)
	}
	mode := os.Args[1]
	fs := flag.NewFlagSet(mode, flag.ExitOnError)
	addr := fs.String("addr", "127.0.0.1:8080", "thaw's HTTP listener")
	defHost := "hello.localhost"
	if mode == "grpc" {
		defHost = "grpc.localhost"
	}
	host := fs.String("host", defHost, "the revision's host")
	n := fs.Int("n", 5, "WebSocket messages to send")
	_ = fs.Parse(os.Args[2:])
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var err error
	if mode == "ws" {
		err = tryWebSocket(ctx, *addr, *host, *n)
	} else {
		err = tryGRPC(ctx, *addr, *host)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}

func tryWebSocket(ctx context.Context, addr, host string, n int) error {
	start := time.Now()
	c, _, err := websocket.DefaultDialer.DialContext(ctx, "ws://"+addr+"/ws", http.Header{"Host": []string{host}})
	if err != nil {
		return fmt.Errorf("upgrade: %w", err)
	}
	defer c.Close()
	fmt.Printf("connected in %s\n", time.Since(start).Round(time.Millisecond))
	for i := 0; i < n; i++ {
		if err := c.WriteMessage(websocket.TextMessage, fmt.Appendf(nil, "message %d", i)); err != nil {
			return err
		}
		_, m, err := c.ReadMessage()
		if err != nil {
			return err
		}
		fmt.Printf("echo: %s\n", m)
	}
	return c.WriteMessage(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""))
}

func tryGRPC(ctx context.Context, addr, host string) error {
	cc, err := grpc.NewClient("passthrough:///"+addr, grpc.WithTransportCredentials(insecure.NewCredentials()), grpc.WithAuthority(host))
	if err != nil {
		return err
	}
	defer cc.Close()
	tc := testpb.NewTestServiceClient(cc)
	start := time.Now()
	r, err := tc.UnaryCall(ctx, &testpb.SimpleRequest{})
	if err != nil {
		return fmt.Errorf("unary: %w", err)
	}
	fmt.Printf("unary (%s): %s\n", time.Since(start).Round(time.Millisecond), r.GetPayload().GetBody())
	ss, err := tc.StreamingOutputCall(ctx, &testpb.StreamingOutputCallRequest{ResponseParameters: []*testpb.ResponseParameters{{}, {IntervalUs: 100000}, {IntervalUs: 100000}}})
	if err != nil {
		return fmt.Errorf("server streaming: %w", err)
	}
	for {
		m, err := ss.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("server streaming: %w", err)
		}
		fmt.Printf("server streaming: %s\n", m.GetPayload().GetBody())
	}
	cs, err := tc.StreamingInputCall(ctx)
	if err != nil {
		return fmt.Errorf("client streaming: %w", err)
	}
	for i := 1; i <= 3; i++ {
		if err := cs.Send(&testpb.StreamingInputCallRequest{Payload: &testpb.Payload{Body: make([]byte, 100*i)}}); err != nil {
			return err
		}
	}
	sum, err := cs.CloseAndRecv()
	if err != nil {
		return fmt.Errorf("client streaming: %w", err)
	}
	fmt.Printf("client streaming: server counted %d bytes\n", sum.GetAggregatedPayloadSize())
	bidi, err := tc.FullDuplexCall(ctx)
	if err != nil {
		return fmt.Errorf("bidi: %w", err)
	}
	for i := 0; i < 3; i++ {
		if err := bidi.Send(&testpb.StreamingOutputCallRequest{Payload: &testpb.Payload{Body: fmt.Appendf(nil, "ping %d", i)}}); err != nil {
			return err
		}
		m, err := bidi.Recv()
		if err != nil {
			return fmt.Errorf("bidi: %w", err)
		}
		fmt.Printf("bidi: %s\n", m.GetPayload().GetBody())
	}
	_ = bidi.CloseSend()
	h, err := healthpb.NewHealthClient(cc).Check(ctx, &healthpb.HealthCheckRequest{})
	if err != nil {
		return fmt.Errorf("health: %w", err)
	}
	fmt.Printf("health: %s\n", h.GetStatus())
	return nil
}
