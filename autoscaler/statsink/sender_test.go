package statsink

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	metricsv3 "github.com/envoyproxy/go-control-plane/envoy/service/metrics/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"
)

// senderEnv names the variable that turns this test binary into the
// load generator of BenchmarkIngestGRPC: it then connects to the address
// in the variable, sends what the benchmark asks for and exits. Sending
// runs in its own process so the benchmark's CPU figure (RUSAGE_SELF) is
// the receiving side only, what thaw pays.
const senderEnv = "THAW_STATSINK_BENCH_SENDER"

func TestMain(m *testing.M) {
	if addr := os.Getenv(senderEnv); addr != "" {
		if err := runSender(addr, os.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "sender:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// runSender opens benchNodes streams to addr, sends each node's first
// flush (with its identifier), then for every line "k" read from in sends
// k more flushes round-robin over the nodes and answers "ok" on out. It
// returns at the end of in.
func runSender(addr string, in io.Reader, out io.Writer) error {
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallSendMsgSize(MaxRecvMsgSize)))
	if err != nil {
		return err
	}
	defer conn.Close()
	clusters := benchClusters()
	bodies := make([][]byte, benchFlushes)
	for f := range benchFlushes {
		if bodies[f], err = proto.Marshal(benchFlush(f, clusters)); err != nil {
			return err
		}
	}
	streams := make([]grpc.ClientStream, benchNodes)
	for n := range benchNodes {
		st, err := metricsv3.NewMetricsServiceClient(conn).StreamMetrics(context.Background(), grpc.ForceCodec(rawCodec{}))
		if err != nil {
			return err
		}
		head, err := proto.Marshal(envoyMsg(nodeName(n), 0))
		if err != nil {
			return err
		}
		if err := st.SendMsg(append(head, bodies[0]...)); err != nil {
			return err
		}
		streams[n] = st
	}
	sent := 0
	sc := bufio.NewScanner(in)
	for sc.Scan() {
		k, err := strconv.Atoi(strings.TrimSpace(sc.Text()))
		if err != nil {
			return fmt.Errorf("command %q: %w", sc.Text(), err)
		}
		for range k {
			n := sent % benchNodes
			if err := streams[n].SendMsg(bodies[1+(sent/benchNodes)%(benchFlushes-1)]); err != nil {
				return err
			}
			sent++
		}
		if _, err := fmt.Fprintln(out, "ok"); err != nil {
			return err
		}
	}
	return sc.Err()
}

// sender is the child process of runSender.
type sender struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Reader
}

// startSender runs this test binary as the sender to addr.
func startSender(b *testing.B, addr string) *sender {
	b.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), senderEnv+"="+addr)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	s := &sender{cmd: cmd, in: in, out: bufio.NewReader(out)}
	b.Cleanup(func() {
		_ = s.in.Close()
		if err := s.cmd.Wait(); err != nil {
			b.Errorf("sender: %v", err)
		}
	})
	return s
}

// send asks the sender for k more flushes and waits until they are sent.
func (s *sender) send(b *testing.B, k int) {
	b.Helper()
	if _, err := fmt.Fprintln(s.in, k); err != nil {
		b.Fatal(err)
	}
	if line, err := s.out.ReadString('\n'); err != nil || line != "ok\n" {
		b.Fatalf("sender answered %q: %v", line, err)
	}
}
