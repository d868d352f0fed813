package main

import (
	"context"
	"net"
	"strconv"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	testpb "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/metadata"
)

// TestGRPCStartHeaders: with --protocol h2c, every unary answer carries the
// instance's port, its start and listening times (started <= listening <=
// the call) and the number of calls begun so far, so a benchmark can
// measure a cold start without /stats.
func TestGRPCStartHeaders(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cfg := config{address: "127.0.0.1", port: port, body: "g", drainTimeout: 5 * time.Second, protocol: "h2c",
		startupDelay: 20 * time.Millisecond}
	before := time.Now()
	done := make(chan error, 1)
	go func() { done <- run(ctx, cfg) }()
	defer func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("run: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Error("run did not return")
		}
	}()

	cc, err := grpc.NewClient("passthrough:///127.0.0.1:"+strconv.Itoa(port), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	client := testpb.NewTestServiceClient(cc)
	for want := int64(1); want <= 2; want++ {
		cctx, ccancel := context.WithTimeout(ctx, 10*time.Second)
		var md metadata.MD
		_, err := client.UnaryCall(cctx, &testpb.SimpleRequest{}, grpc.WaitForReady(true), grpc.Header(&md))
		ccancel()
		after := time.Now()
		if err != nil {
			t.Fatalf("call %d: %v", want, err)
		}
		num := func(k string) int64 {
			t.Helper()
			v := md.Get(k)
			if len(v) != 1 {
				t.Fatalf("call %d: header %s = %q, want one value", want, k, v)
			}
			n, err := strconv.ParseInt(v[0], 10, 64)
			if err != nil {
				t.Fatalf("call %d: header %s: %v", want, k, err)
			}
			return n
		}
		started, listening := time.Unix(0, num("x-workload-started-unix-nano")), time.Unix(0, num("x-workload-listening-unix-nano"))
		if started.Before(before) || listening.Sub(started) < cfg.startupDelay || listening.After(after) {
			t.Errorf("call %d: started %s, listening %s; want %s <= started, started + %s <= listening <= %s",
				want, started, listening, before, cfg.startupDelay, after)
		}
		if got := num("x-workload-requests"); got != want {
			t.Errorf("call %d: x-workload-requests = %d", want, got)
		}
		if got := num("x-workload-port"); got != int64(port) {
			t.Errorf("call %d: x-workload-port = %d, want %d", want, got, port)
		}
	}
}
