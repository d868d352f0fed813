package main

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// buildTiny compiles a tiny Go program for linux/amd64 with the given cgo
// setting; a stand-in for thaw that builds in seconds.
func buildTiny(t *testing.T, cgo bool) string {
	t.Helper()
	dir := t.TempDir()
	src := filepath.Join(dir, "main.go")
	if err := os.WriteFile(src, []byte("package main\n\nimport \"os/user\"\n\nfunc main() { _, _ = user.Current() }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "tiny")
	cmd := exec.Command("go", "build", "-o", out, src)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOOS=linux", "GOARCH=amd64", "GOFLAGS=", "GO111MODULE=off")
	if cgo {
		cmd.Env = append(cmd.Env, "CGO_ENABLED=1")
	} else {
		cmd.Env = append(cmd.Env, "CGO_ENABLED=0")
	}
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, b)
	}
	return out
}

// TestBuildAndCheck builds an image from a static binary, reads the
// tarball back (config, layer, tag) and checks what Check promises.
func TestBuildAndCheck(t *testing.T) {
	bin := buildTiny(t, false)
	out := filepath.Join(t.TempDir(), "image.tar")
	opts := Options{Binary: bin, Arch: "amd64", Tag: "ghcr.io/thaw-dev/thaw:v9.9.9", Version: "v9.9.9", Out: out}
	if err := Build(opts); err != nil {
		t.Fatalf("Build: %v", err)
	}
	if err := Check(out, "amd64", false); err != nil {
		t.Fatalf("Check: %v", err)
	}
	if err := Check(out, "amd64", true); err == nil || !strings.Contains(err.Error(), "no /thaw-activator.so") {
		t.Errorf("Check with the module required, on an image without it = %v", err)
	}
	if err := Check(out, "arm64", false); err == nil || !strings.Contains(err.Error(), "platform linux/amd64, want linux/arm64") {
		t.Errorf("Check for arm64 = %v, want a platform mismatch", err)
	}

	// The tarball is also what `docker load` reads (manifest.json).
	img, err := tarball.ImageFromPath(out, nil)
	if err != nil {
		t.Fatalf("read as a docker load tarball: %v", err)
	}
	m, err := tarball.LoadManifest(func() (io.ReadCloser, error) { return os.Open(out) })
	if err != nil || len(m) != 1 || len(m[0].RepoTags) != 1 || m[0].RepoTags[0] != "ghcr.io/thaw-dev/thaw:v9.9.9" {
		t.Errorf("manifest.json %+v (%v), want one image tagged ghcr.io/thaw-dev/thaw:v9.9.9", m, err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cf.Config.User != "65532:65532" || cf.Config.Entrypoint[0] != "/thaw" || cf.OS != "linux" || cf.Architecture != "amd64" ||
		cf.Config.Labels["org.opencontainers.image.version"] != "v9.9.9" {
		t.Errorf("config %+v", cf.Config)
	}
	// Same binary, same image: the digest is reproducible.
	out2 := filepath.Join(t.TempDir(), "image.tar")
	opts.Out = out2
	if err := Build(opts); err != nil {
		t.Fatal(err)
	}
	img2, err := tarball.ImageFromPath(out2, nil)
	if err != nil {
		t.Fatal(err)
	}
	d1, _ := img.Digest()
	d2, _ := img2.Digest()
	if d1 != d2 {
		t.Errorf("two builds of one binary: digests %s and %s", d1, d2)
	}
}

// TestBuildRefusesUnusableBinaries: a dynamically linked binary, one for
// another architecture, or a non-ELF file never becomes an image.
func TestBuildRefusesUnusableBinaries(t *testing.T) {
	static := buildTiny(t, false)
	notELF := filepath.Join(t.TempDir(), "script")
	if err := os.WriteFile(notELF, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		bin, arch, want string
	}{
		"wrong architecture": {static, "arm64", "want EM_AARCH64"},
		"unknown arch":       {static, "mips", "want one of"},
		"not an ELF file":    {notELF, "amd64", "binary"},
	}
	if runtime.GOOS == "linux" && runtime.GOARCH == "amd64" {
		if _, err := exec.LookPath("gcc"); err == nil {
			cases["dynamically linked"] = struct{ bin, arch, want string }{buildTiny(t, true), "amd64", "dynamically linked"}
		}
	}
	for name, c := range cases {
		err := Build(Options{Binary: c.bin, Arch: c.arch, Tag: "ghcr.io/thaw-dev/thaw:x", Out: filepath.Join(t.TempDir(), "i.tar")})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: Build error %v, want one containing %q", name, err, c.want)
		}
	}
}

// TestBuildWithModule: the activator module rides in the image at
// ModulePath (a c-shared object exporting Envoy's init hook); anything
// else is refused.
func TestBuildWithModule(t *testing.T) {
	if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" {
		t.Skip("builds a linux/amd64 c-shared object with the host's C compiler")
	}
	if _, err := exec.LookPath("gcc"); err != nil {
		t.Skip("no C compiler: a c-shared object needs cgo")
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "mod.go")
	if err := os.WriteFile(src, []byte("package main\n\nimport \"C\"\n\n//export "+moduleInitSymbol+"\nfunc "+moduleInitSymbol+"() *C.char { return nil }\n\nfunc main() {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	so := filepath.Join(dir, "mod.so")
	cmd := exec.Command("go", "build", "-buildmode=c-shared", "-o", so, src)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=1", "GOFLAGS=", "GO111MODULE=off")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build -buildmode=c-shared: %v\n%s", err, b)
	}
	bin := buildTiny(t, false)
	out := filepath.Join(t.TempDir(), "image.tar")
	if err := Build(Options{Binary: bin, Module: so, Arch: "amd64", Tag: "ghcr.io/thaw-dev/thaw:x", Out: out}); err != nil {
		t.Fatalf("Build: %v", err)
	}
	if err := Check(out, "amd64", true); err != nil {
		t.Fatalf("Check: %v", err)
	}
	// A static executable is not a module.
	err := Build(Options{Binary: bin, Module: bin, Arch: "amd64", Tag: "ghcr.io/thaw-dev/thaw:x", Out: filepath.Join(t.TempDir(), "i.tar")})
	if err == nil || !strings.Contains(err.Error(), "shared object") {
		t.Errorf("Build with an executable as module: %v, want a refusal", err)
	}
}
