package local

import (
	"crypto/sha256"
	"fmt"
	"io"
	"os"
	"time"
)

// ContentCheckEvery is how often Watch hashes the configuration file even
// when a stat says it did not change (same file, size and modification
// time). Between such checks a tick costs one stat: at 100,000 revisions
// the file is ~14 MB, and reading and hashing it every second took ~14 ms
// of CPU and 14 MB of garbage per second, which made thaw's collector run
// every ~30 s with 2-3 s of CPU per cycle (docs/scaling.md, "Where a
// return to zero's time goes at 100,000").
const ContentCheckEvery = 30 * time.Second

// fileCheck tells Watch whether the configuration file may have changed:
// it stats the file each time and hashes its content (SHA-256, streamed
// through a small buffer) only when the stat differs from the one taken
// before the last hash (another file at the path, another size or another
// modification time) or when the last hash is ContentCheckEvery old. The
// content decides, as before: a write that keeps size and modification
// time (a filesystem with coarse timestamps, a copy that restores the
// time) is still seen, within ContentCheckEvery. Not safe for concurrent
// use: Watch's goroutine only.
type fileCheck struct {
	path  string
	every time.Duration
	// hash returns the content's digest; a field so tests count reads.
	hash func(path string) ([32]byte, error)

	stat     os.FileInfo // taken just before the last hash; nil: none yet
	hashedAt time.Time
	sum      [32]byte
}

// newFileCheck returns a fileCheck of path hashing at least every every.
func newFileCheck(path string, every time.Duration) *fileCheck {
	return &fileCheck{path: path, every: every, hash: fileSum}
}

// check returns the file's content digest at now: hashed again when the
// file may have changed, else the last one (hashed false). The error is
// the stat's or the read's, wrapped (os.ErrNotExist for a missing file);
// after an error the next check hashes again.
func (f *fileCheck) check(now time.Time) (sum [32]byte, hashed bool, err error) {
	fi, err := os.Stat(f.path)
	if err != nil {
		f.stat = nil
		return [32]byte{}, false, fmt.Errorf("stat %s: %w", f.path, err)
	}
	if f.stat != nil && os.SameFile(fi, f.stat) && fi.Size() == f.stat.Size() &&
		fi.ModTime().Equal(f.stat.ModTime()) && now.Sub(f.hashedAt) < f.every {
		return f.sum, false, nil
	}
	// The stat is taken before the read: a write during the read changes
	// the next stat, so the next check reads again.
	sum, err = f.hash(f.path)
	if err != nil {
		f.stat = nil
		return [32]byte{}, false, err
	}
	f.stat, f.hashedAt, f.sum = fi, now, sum
	return sum, true, nil
}

// fileSum returns the SHA-256 of the file at path, read through a 64 KiB
// buffer (not the whole file in memory).
func fileSum(path string) ([32]byte, error) {
	fh, err := os.Open(path)
	if err != nil {
		return [32]byte{}, fmt.Errorf("read %s: %w", path, err)
	}
	defer fh.Close()
	h := sha256.New()
	if _, err := io.CopyBuffer(h, fh, make([]byte, 64<<10)); err != nil {
		return [32]byte{}, fmt.Errorf("read %s: %w", path, err)
	}
	var sum [32]byte
	h.Sum(sum[:0])
	return sum, nil
}
