package local

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"
)

// State directory layout (Options.StateDir).
const (
	stateFileName = "local-instances.json"
	lockFileName  = "local.lock"
	outputDirName = "output"
	stateVersion  = 1
)

// ErrStateDirInUse is returned by Run when another thaw holds the state
// directory.
var ErrStateDirInUse = errors.New("local platform state directory in use by another process")

// stateFile is the JSON the platform keeps in StateDir so that a restarted
// thaw can adopt the processes a crashed one left running.
type stateFile struct {
	Version   int             `json:"version"`
	Instances []stateInstance `json:"instances"`
}

// stateInstance records one running process.
type stateInstance struct {
	Revision string `json:"revision"` // namespace/name
	Instance string `json:"instance"` // name-seq
	Seq      int    `json:"seq"`
	Pid      int    `json:"pid"`
	Pgid     int    `json:"pgid"`
	Port     int32  `json:"port"`
	// Fingerprint is configFingerprint of the RevisionConfig it was started
	// from.
	Fingerprint string `json:"fingerprint"`
	// Argv is the command line it was started with (port substituted).
	Argv      []string  `json:"argv"`
	StartedAt time.Time `json:"startedAt"`
	// StartTicks and BootID identify the process beyond its pid (see
	// procStat).
	StartTicks    uint64 `json:"startTicks"`
	BootID        string `json:"bootId"`
	StopTimeoutMS int64  `json:"stopTimeoutMs"`
}

// configFingerprint hashes what decides how a revision's processes run: the
// command (port placeholder unsubstituted), the directory and the
// revision's environment (not thaw's own, which may differ between runs).
func configFingerprint(rc RevisionConfig) string {
	b, err := json.Marshal(struct {
		Command []string
		Dir     string
		Env     map[string]string // encoding/json sorts the keys
	}{rc.Command, rc.Dir, rc.Env})
	if err != nil {
		panic(fmt.Sprintf("local: fingerprint: %v", err)) // strings only: cannot fail
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:16])
}

// stateStore is an opened StateDir: it holds an exclusive lock on it until
// close, so two thaws never manage the same processes.
type stateStore struct {
	dir  string
	lock *os.File
}

// openStateStore creates dir (0700) and locks it. The lock (flock) ends
// with the process, so a crashed thaw leaves it free.
func openStateStore(dir string) (*stateStore, error) {
	if err := os.MkdirAll(filepath.Join(dir, outputDirName), 0o700); err != nil {
		return nil, fmt.Errorf("local platform state dir: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(dir, lockFileName), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("local platform state dir: %w", err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, fmt.Errorf("%s: %w", dir, ErrStateDirInUse)
		}
		return nil, fmt.Errorf("lock local platform state dir %s: %w", dir, err)
	}
	return &stateStore{dir: dir, lock: f}, nil
}

func (s *stateStore) path() string { return filepath.Join(s.dir, stateFileName) }

// outputPath is where one instance's stdout or stderr goes.
func (s *stateStore) outputPath(instanceFile, stream string) string {
	return filepath.Join(s.dir, outputDirName, instanceFile+"."+stream)
}

// load returns the recorded instances; none when there is no state file.
func (s *stateStore) load() ([]stateInstance, error) {
	b, err := os.ReadFile(s.path())
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read state: %w", err)
	}
	var f stateFile
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("state file %s: %w", s.path(), err)
	}
	if f.Version != stateVersion {
		return nil, fmt.Errorf("state file %s: version %d, want %d", s.path(), f.Version, stateVersion)
	}
	return f.Instances, nil
}

// save replaces the state file atomically (temporary file and rename); it
// removes the file when no instance is recorded.
func (s *stateStore) save(instances []stateInstance) error {
	if len(instances) == 0 {
		if err := os.Remove(s.path()); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("remove state: %w", err)
		}
		return nil
	}
	b, err := json.MarshalIndent(stateFile{Version: stateVersion, Instances: instances}, "", "  ")
	if err != nil {
		return fmt.Errorf("encode state: %w", err)
	}
	tmp, err := os.CreateTemp(s.dir, stateFileName+".*.tmp")
	if err != nil {
		return fmt.Errorf("write state: %w", err)
	}
	_, err = tmp.Write(append(b, '\n'))
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), s.path())
	}
	if err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("write state: %w", err)
	}
	return nil
}

// close releases the lock. The output directory is removed when empty.
func (s *stateStore) close() {
	_ = os.Remove(filepath.Join(s.dir, outputDirName))
	s.lock.Close()
}
