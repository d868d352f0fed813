// Package local is the embedded default platform: revisions from a YAML file,
// each backend a local process started on a free loopback port, probed for
// readiness and stopped with SIGTERM after leaving the backend set.
//
// # File format
//
//	revisions:
//	  - name: hello                 # DNS label; key local/hello
//	    namespace: local            # optional, default "local"
//	    hosts: [hello.localhost]    # HTTP authorities routed to it
//	    command: [./bin/workload, --port, "{port}"]  # {port} is substituted
//	    workingDir: ..              # relative to this file; default its directory
//	    env: {BODY: hi, LATENCY: 50ms}  # added to thaw's environment
//	    readiness:                  # default: TCP connect, period 1s, timeout 1s
//	      path: /healthz            # HTTP GET, 2xx/3xx passes; or tcp: true
//	      period: 1s
//	      timeout: 1s
//	      failureThreshold: 3
//	    stopTimeout: 10s            # SIGTERM → SIGKILL, default 10s
//	    autoscaling:                # revision.ParseSettings keys, bare
//	      target: 10
//	      container-concurrency: 20
//
// Every process gets PORT, THAW_REVISION and THAW_INSTANCE in its
// environment. Durations are Go durations or numbers of seconds; settings
// values may be YAML numbers or strings. Load returns the valid revisions
// and reports each rejected one with an error naming the file, the revision
// and the field, so thaw can run the others.
//
// # Processes
//
// Platform implements autoscaler.ScaleTarget. Each unit of scale is an
// instance ("hello-3"): a process in its own process group on a port chosen
// by listening on 127.0.0.1:0 and closing the listener (another program may
// take it in between; the process then fails and is restarted on a new
// port). An instance is a backend while its readiness probe passes; until
// its first pass it is checked every Options.StartupProbeInterval (2ms by
// default) so cold starts are seen quickly.
//
// Scaling down stops the least busy instances (not ready first, then the
// fewest requests in flight per Options.Load, or connections, then the
// newest) and follows the order that keeps requests safe: the instance
// leaves the registry's backend set first; then it waits until every Envoy
// acknowledged endpoints without it (Options.Router; without one, the
// drain period), until the optional Drainer reports it idle, and until no
// connection that may carry a request is left on its port (conns.go; the
// instances draining at once share one read of Options.Load per poll,
// drainload.go), all
// within the drain timeout (the revision's request-timeout plus hold-timeout
// unless Options.DrainTimeout is set); then it gets SIGTERM,
// and SIGKILL after the revision's stop timeout.
// A process that exits on its own is removed from the backends at once and
// restarted with exponential backoff. Output is logged line by line with
// the revision and instance as fields. When Run's context ends, every
// process is stopped (no drain period) and Run returns once all are gone.
//
// # Surviving a crash of thaw
//
// Processes run in their own process groups and are not killed when thaw
// dies, so Envoy (which keeps its configuration) goes on routing warm
// traffic to them. With Options.StateDir the platform records every
// running process in StateDir/local-instances.json (replaced atomically on
// every start and exit) and sends process output to files under
// StateDir/output, which it follows (a pipe would break when thaw dies and
// kill the next writer with SIGPIPE). The next Run adopts a recorded
// process when it is provably the one recorded (same boot, pid, start
// time and process group, and the recorded command line or, after an
// exec, the PORT/THAW_REVISION/THAW_INSTANCE environment thaw gave it) and
// its revision is still configured with the same command, directory and
// environment and an executable not replaced on disk. Adopted processes
// are probed once and published before the registry is marked synced, so
// the first snapshot Envoy gets after the restart still routes to them;
// the revision's desired scale becomes the adopted count. They are
// watched by polling /proc (they are not children: exit status unknown)
// and stopped like the others. Recorded processes that are ours but no
// longer match are stopped after the drain period; anything else in the
// file is left alone. A clean shutdown stops everything and removes the
// state file.
package local
