package local

import (
	"bufio"
	"errors"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"
)

// Output handling limits.
const (
	// maxLine is the longest output line logged in one entry; longer lines
	// are split.
	maxLine = 16 << 10
	// outputGrace bounds how long a pipe is still read after the process
	// group was killed (a daemonized grandchild could hold it forever).
	outputGrace = time.Second
	// outputPoll is how often an output file is checked for new lines.
	outputPoll = 100 * time.Millisecond
	// maxOutputFile is the size at which a fully read output file is
	// truncated (the process appends, so it goes on writing at the start).
	// Lines written between the last read and the truncation are lost.
	maxOutputFile = 4 << 20
)

// stream is one of a process's stdout and stderr.
type stream struct {
	name string   // "stdout" or "stderr"
	w    *os.File // the child's end, closed once it started; nil if adopted
	r    streamReader
}

// streamReader is our end of a stream. Read blocks until output arrives and
// returns io.EOF after finish once everything was read; close releases it.
type streamReader interface {
	io.Reader
	// finish is called once the process (and its group) has exited.
	finish()
	close()
}

// pipeStreams returns a pipe per stream.
func pipeStreams() ([2]stream, error) {
	var s [2]stream
	for i, name := range []string{"stdout", "stderr"} {
		r, w, err := os.Pipe()
		if err != nil {
			for _, prev := range s[:i] {
				prev.w.Close()
				prev.r.close()
			}
			return s, err
		}
		s[i] = stream{name: name, w: w, r: &pipeReader{f: r}}
	}
	return s, nil
}

// pipeReader reads a pipe; after finish it gives the remaining writers
// outputGrace before it is closed under them.
type pipeReader struct {
	f     *os.File
	timer *time.Timer
}

func (p *pipeReader) Read(b []byte) (int, error) { return p.f.Read(b) }

func (p *pipeReader) finish() { p.timer = time.AfterFunc(outputGrace, func() { p.f.Close() }) }

func (p *pipeReader) close() {
	if p.timer != nil {
		p.timer.Stop()
	}
	p.f.Close()
}

// outputFiles are the files in the state directory that one instance's
// processes write to: <dir>/output/<namespace>_<instance>.stdout and
// .stderr. Unlike a pipe, a file outlives thaw, so a process that writes
// after thaw crashed does not get SIGPIPE, and its output can be followed
// again once adopted.
type outputFiles struct {
	store *stateStore
	base  string
}

// create truncates (or creates) the files for a new process.
func (o *outputFiles) create() ([2]stream, error) {
	var s [2]stream
	for i, name := range []string{"stdout", "stderr"} {
		path := o.store.outputPath(o.base, name)
		w, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|os.O_APPEND, 0o600)
		var r *os.File
		if err == nil {
			r, err = os.OpenFile(path, os.O_RDWR, 0)
			if err != nil {
				w.Close()
			}
		}
		if err != nil {
			for _, prev := range s[:i] {
				prev.w.Close()
				prev.r.close()
			}
			return s, err
		}
		s[i] = stream{name: name, w: w, r: newFollowReader(r, 0)}
	}
	return s, nil
}

// follow opens the files of an adopted process at their current end.
// Missing files are skipped: that output is not captured.
func (o *outputFiles) follow() []stream {
	var s []stream
	for _, name := range []string{"stdout", "stderr"} {
		f, err := os.OpenFile(o.store.outputPath(o.base, name), os.O_RDWR, 0)
		if err != nil {
			continue
		}
		off, err := f.Seek(0, io.SeekEnd)
		if err != nil {
			f.Close()
			continue
		}
		s = append(s, stream{name: name, r: newFollowReader(f, off)})
	}
	return s
}

// followReader reads a file a process appends to, polling at its end.
type followReader struct {
	f      *os.File
	off    int64
	exited chan struct{}
}

func newFollowReader(f *os.File, off int64) *followReader {
	return &followReader{f: f, off: off, exited: make(chan struct{})}
}

func (r *followReader) Read(b []byte) (int, error) {
	final := false
	for {
		n, err := r.f.Read(b)
		if n > 0 {
			r.off += int64(n)
			return n, nil
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return 0, err
		}
		if final {
			return 0, io.EOF
		}
		if r.off >= maxOutputFile {
			if err := r.f.Truncate(0); err == nil {
				if _, err := r.f.Seek(0, io.SeekStart); err != nil {
					return 0, err
				}
				r.off = 0
			}
		}
		t := time.NewTimer(outputPoll)
		select {
		case <-r.exited:
			final = true // read what is left, then EOF
		case <-t.C:
		}
		t.Stop()
	}
}

func (r *followReader) finish() { close(r.exited) }

func (r *followReader) close() {
	r.f.Close()
	_ = os.Remove(r.f.Name())
}

// logStreams logs every stream's lines until it ends, keeping the last
// lines of stderr in errTail (nil: not kept).
func logStreams(streams []stream, log *zap.Logger, errTail *lineTail) *sync.WaitGroup {
	var wg sync.WaitGroup
	for _, s := range streams {
		var t *lineTail
		if s.name == "stderr" {
			t = errTail
		}
		wg.Add(1)
		go logLines(&wg, s.r, log.With(zap.String("stream", s.name)), t)
	}
	return &wg
}

// finishStreams is called once the process has exited: it lets the readers
// drain, waits for them and releases the streams.
func finishStreams(streams []stream, readers *sync.WaitGroup) {
	for _, s := range streams {
		s.r.finish()
	}
	readers.Wait()
	for _, s := range streams {
		s.r.close()
	}
}

func logLines(wg *sync.WaitGroup, r io.Reader, log *zap.Logger, t *lineTail) {
	defer wg.Done()
	br := bufio.NewReaderSize(r, maxLine)
	for {
		line, err := br.ReadSlice('\n')
		if len(line) > 0 {
			text := strings.TrimRight(string(line), "\r\n")
			log.Info("process output", zap.String("line", text))
			t.add(text)
		}
		if err != nil && !errors.Is(err, bufio.ErrBufferFull) {
			return
		}
	}
}
