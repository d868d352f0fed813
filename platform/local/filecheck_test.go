package local

import (
	"crypto/sha256"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestFileCheck: an unchanged file costs a stat, not a read; any change
// a stat shows (size, modification time, another file renamed over the
// path, the file gone and back) reads it again; a write a stat cannot
// show (same size and modification time) is read at the next content
// check, ContentCheckEvery after the last.
func TestFileCheck(t *testing.T) {
	t0 := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	mtime := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	type step struct {
		name       string
		do         func(t *testing.T, path string)
		after      time.Duration // since t0
		wantRead   bool
		wantBody   string // content the digest must be of ("" with wantErr)
		wantErrNot bool   // the error is os.ErrNotExist
	}
	write := func(body string, mt time.Time) func(t *testing.T, path string) {
		return func(t *testing.T, path string) {
			t.Helper()
			if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Chtimes(path, mt, mt); err != nil {
				t.Fatal(err)
			}
		}
	}
	renameOver := func(body string, mt time.Time) func(t *testing.T, path string) {
		return func(t *testing.T, path string) {
			t.Helper()
			tmp := path + ".new"
			write(body, mt)(t, tmp)
			if err := os.Rename(tmp, path); err != nil {
				t.Fatal(err)
			}
		}
	}
	steps := []step{
		{name: "first check reads", do: write("aaaa", mtime), wantRead: true, wantBody: "aaaa"},
		{name: "unchanged: stat only", after: time.Second, wantBody: "aaaa"},
		{name: "unchanged again", after: 2 * time.Second, wantBody: "aaaa"},
		{name: "new size", do: write("aaaaa", mtime), after: 3 * time.Second, wantRead: true, wantBody: "aaaaa"},
		{name: "same size, new modification time", do: write("bbbbb", mtime.Add(time.Second)), after: 4 * time.Second,
			wantRead: true, wantBody: "bbbbb"},
		{name: "another file renamed over it, same size and time", do: renameOver("ccccc", mtime.Add(time.Second)),
			after: 5 * time.Second, wantRead: true, wantBody: "ccccc"},
		{name: "in place, same size and time: not seen by stat", do: write("ddddd", mtime.Add(time.Second)),
			after: 6 * time.Second, wantBody: "ccccc"},
		{name: "seen at the content check", after: 5*time.Second + ContentCheckEvery, wantRead: true, wantBody: "ddddd"},
		{name: "gone", do: func(t *testing.T, path string) {
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
		}, after: 40 * time.Second, wantErrNot: true},
		{name: "back with the same content, size and time: read", do: write("ddddd", mtime.Add(time.Second)),
			after: 41 * time.Second, wantRead: true, wantBody: "ddddd"},
	}
	path := filepath.Join(t.TempDir(), "revisions.yaml")
	f := newFileCheck(path, ContentCheckEvery)
	reads := 0
	f.hash = func(p string) ([32]byte, error) {
		reads++
		return fileSum(p)
	}
	for _, s := range steps {
		if s.do != nil {
			s.do(t, path)
		}
		before := reads
		sum, hashed, err := f.check(t0.Add(s.after))
		read := reads > before
		if read != s.wantRead || hashed != s.wantRead {
			t.Fatalf("%s: read %v, hashed %v, want %v", s.name, read, hashed, s.wantRead)
		}
		if s.wantErrNot {
			if !errors.Is(err, os.ErrNotExist) || sum != ([32]byte{}) {
				t.Fatalf("%s: check = %x, %v; want a zero digest and os.ErrNotExist", s.name, sum, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if want := sha256.Sum256([]byte(s.wantBody)); sum != want {
			t.Fatalf("%s: digest is not of %q", s.name, s.wantBody)
		}
	}
}

// TestFileSumStreams: the streamed digest equals the whole file's for a
// file larger than its buffer; a missing file's error names the path and
// is os.ErrNotExist.
func TestFileSumStreams(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "big.yaml")
	body := []byte(strings.Repeat("revisions: x\n", 20_000)) // ~260 KB, 4 buffers
	if err := os.WriteFile(path, body, 0o644); err != nil {
		t.Fatal(err)
	}
	sum, err := fileSum(path)
	if err != nil || sum != sha256.Sum256(body) {
		t.Fatalf("fileSum = %x, %v; want %x", sum, err, sha256.Sum256(body))
	}
	missing := filepath.Join(dir, "missing.yaml")
	if _, err := fileSum(missing); !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), missing) {
		t.Fatalf("fileSum(missing) error = %v, want os.ErrNotExist naming the path", err)
	}
}

// BenchmarkConfigFileCheck: one Watch tick on an unchanged 100,000-revision
// file (~14 MB, scenario scale100k's shape): reading and hashing it whole
// (before) against fileCheck's stat (after), in the same run.
func BenchmarkConfigFileCheck(b *testing.B) {
	path := filepath.Join(b.TempDir(), "revisions.yaml")
	line := `  - {name: s000000, hosts: [s000000.bench], command: ["/usr/local/bin/workload", --port, "{port}"], autoscaling: {initial-scale: "0"}}` + "\n"
	if err := os.WriteFile(path, []byte("revisions:\n"+strings.Repeat(line, 100_000)), 0o644); err != nil {
		b.Fatal(err)
	}
	b.Run("read-and-hash", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			data, err := os.ReadFile(path)
			if err != nil {
				b.Fatal(err)
			}
			_ = sha256.Sum256(data)
		}
	})
	b.Run("stat", func(b *testing.B) {
		f := newFileCheck(path, ContentCheckEvery)
		now := time.Now()
		if _, _, err := f.check(now); err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			if _, hashed, err := f.check(now); err != nil || hashed {
				b.Fatalf("check: hashed %v, %v", hashed, err)
			}
		}
	})
}
