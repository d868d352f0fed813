package peers

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// BinVersion is the version of a tool `make tools-peers` (or tools-envoy)
// cached: the link's target sits in $THAW_CACHE/<name>-<version>/.
func BinVersion(bin, name string) string {
	real, err := filepath.EvalSymlinks(bin)
	if err != nil {
		return "unknown"
	}
	if v, ok := strings.CutPrefix(filepath.Base(filepath.Dir(real)), name+"-"); ok {
		return v
	}
	return "unknown"
}

// ThawVersion asks the thaw binary for its version (`thaw version`).
func ThawVersion(bin string) string {
	out, err := exec.Command(bin, "version").Output()
	if err != nil {
		return "unknown"
	}
	return strings.TrimSpace(string(out))
}

// CheckBinary returns nil when bin is an executable file, else an error
// telling how to build it.
func CheckBinary(bin string) error {
	st, err := os.Stat(bin)
	if err != nil {
		return fmt.Errorf("%s not found: run `make tools-peers` (%w)", bin, err)
	}
	if st.Mode()&0o111 == 0 {
		return fmt.Errorf("%s is not executable", bin)
	}
	return nil
}

// EnvoyVersion is the release in `envoy --version` ("envoy  version:
// <sha>/<release>/..."), or its whole first line.
func EnvoyVersion(bin string) string {
	out, err := exec.Command(bin, "--version").Output()
	if err != nil {
		return "unknown"
	}
	line := strings.TrimSpace(strings.SplitN(strings.TrimSpace(string(out)), "\n", 2)[0])
	if _, v, ok := strings.Cut(line, "version: "); ok {
		if parts := strings.Split(v, "/"); len(parts) > 1 {
			return parts[1]
		}
		return v
	}
	return line
}
