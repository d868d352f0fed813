package main

import (
	"archive/tar"
	"bytes"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Image facts every thaw image has.
const (
	// User is the numeric user:group thaw runs as (the "nonroot" user of
	// distroless images; no /etc/passwd is needed for a numeric user).
	User = "65532:65532"
	// BinaryPath is where the binary lives in the image.
	BinaryPath = "/thaw"
	// ModulePath is where the activator module (Envoy dynamic module,
	// bin/thaw-activator.so) lives in the image: `thaw install-module`
	// copies it from there into the fleet's Envoy pods
	// (manifests/components/activator-module).
	ModulePath = "/thaw-activator.so"
	// moduleInitSymbol is the hook every Envoy dynamic module exports.
	moduleInitSymbol = "envoy_dynamic_module_on_program_init"
	// OS is the image's operating system.
	OS = "linux"
)

// machines maps GOARCH values to the ELF machine a binary must carry.
var machines = map[string]elf.Machine{
	"amd64":   elf.EM_X86_64,
	"arm64":   elf.EM_AARCH64,
	"ppc64le": elf.EM_PPC64,
	"s390x":   elf.EM_S390,
}

// Options describe one image build.
type Options struct {
	// Binary is the path of a statically linked linux thaw binary.
	Binary string
	// Module, when set, is the activator module (a linux shared object
	// for Arch, built with cgo) added at ModulePath.
	Module string
	// Arch is the GOARCH the binary was built for ("amd64").
	Arch string
	// Tag names the image inside the tarball
	// ("ghcr.io/thaw-dev/thaw:v0.1.0").
	Tag string
	// Version goes into the org.opencontainers.image.version label.
	Version string
	// Out is the tarball to write.
	Out string
}

// epoch is every file's modification time and the image's creation time,
// so one binary always gives the same image digest.
var epoch = time.Unix(0, 0).UTC()

// checkBinary returns an error unless path is a statically linked ELF
// executable for arch: no program interpreter (PT_INTERP), so it runs on
// an empty base with no libc.
func checkBinary(path, arch string) error {
	want, ok := machines[arch]
	if !ok {
		return fmt.Errorf("arch %q: want one of amd64, arm64, ppc64le, s390x", arch)
	}
	f, err := elf.Open(path)
	if err != nil {
		return fmt.Errorf("binary %s: %w", path, err)
	}
	defer f.Close()
	if f.Machine != want {
		return fmt.Errorf("binary %s is for %v, want %v (GOARCH=%s)", path, f.Machine, want, arch)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return fmt.Errorf("binary %s is dynamically linked (build it with CGO_ENABLED=0)", path)
		}
	}
	return nil
}

// layerTar returns a tar stream holding the binary at BinaryPath (mode
// 0755, owned by root: the runtime user may run it, not change it) and,
// when module is not nil, the activator module at ModulePath (0444).
// thaw writes no files (its pod's root filesystem is read-only).
func layerTar(binary, module []byte) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	files := []struct {
		path string
		mode int64
		data []byte
	}{{BinaryPath, 0o755, binary}}
	if module != nil {
		files = append(files, struct {
			path string
			mode int64
			data []byte
		}{ModulePath, 0o444, module})
	}
	for _, f := range files {
		h := &tar.Header{Typeflag: tar.TypeReg, Name: f.path[1:], Mode: f.mode, Size: int64(len(f.data)), ModTime: epoch, Format: tar.FormatPAX}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(f.data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// checkModule returns an error unless path is an ELF shared object for
// arch that exports moduleInitSymbol (what Envoy looks up first).
func checkModule(path, arch string) error {
	f, err := elf.Open(path)
	if err != nil {
		return fmt.Errorf("module %s: %w", path, err)
	}
	defer f.Close()
	if want := machines[arch]; f.Machine != want {
		return fmt.Errorf("module %s is for %v, want %v (GOARCH=%s)", path, f.Machine, want, arch)
	}
	if f.Type != elf.ET_DYN {
		return fmt.Errorf("module %s is %v, want a shared object (go build -buildmode=c-shared)", path, f.Type)
	}
	syms, err := f.DynamicSymbols()
	if err != nil {
		return fmt.Errorf("module %s: %w", path, err)
	}
	for _, s := range syms {
		if s.Name == moduleInitSymbol {
			return nil
		}
	}
	return fmt.Errorf("module %s does not export %s: not an Envoy dynamic module", path, moduleInitSymbol)
}

// Build makes the image of opts and writes it to opts.Out. Errors: an
// unusable binary (see checkBinary), a bad tag, or an I/O error.
func Build(opts Options) error {
	if err := checkBinary(opts.Binary, opts.Arch); err != nil {
		return err
	}
	tag, err := name.NewTag(opts.Tag)
	if err != nil {
		return fmt.Errorf("tag %q: %w", opts.Tag, err)
	}
	bin, err := os.ReadFile(opts.Binary)
	if err != nil {
		return err
	}
	var mod []byte
	if opts.Module != "" {
		if err := checkModule(opts.Module, opts.Arch); err != nil {
			return err
		}
		if mod, err = os.ReadFile(opts.Module); err != nil {
			return err
		}
	}
	content, err := layerTar(bin, mod)
	if err != nil {
		return fmt.Errorf("layer: %w", err)
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(content)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return fmt.Errorf("layer: %w", err)
	}
	img := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	img, err = mutate.Append(img, mutate.Addendum{Layer: layer, MediaType: types.OCILayer,
		History: v1.History{CreatedBy: "tools/image: COPY thaw " + BinaryPath, Created: v1.Time{Time: epoch}}})
	if err != nil {
		return fmt.Errorf("append layer: %w", err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = OS, opts.Arch
	cf.Created = v1.Time{Time: epoch}
	cf.Config.User = User
	cf.Config.Entrypoint = []string{BinaryPath}
	cf.Config.Cmd = nil
	cf.Config.WorkingDir = "/"
	cf.Config.Labels = map[string]string{
		"org.opencontainers.image.title":   "thaw",
		"org.opencontainers.image.source":  "https://github.com/thaw-dev/thaw",
		"org.opencontainers.image.version": opts.Version,
	}
	if img, err = mutate.ConfigFile(img, cf); err != nil {
		return fmt.Errorf("config: %w", err)
	}
	if err := writeArchive(opts.Out, tag, img); err != nil {
		return fmt.Errorf("write %s: %w", opts.Out, err)
	}
	return nil
}

// Check reads an image tarball written by Build and returns an error
// unless it is an OCI image layout with one OCI image (plus the
// manifest.json `docker load` reads) whose config has user User,
// entrypoint [BinaryPath], os OS and architecture arch, and whose only
// layer holds BinaryPath as a static executable for arch and, with
// withModule, ModulePath as an Envoy dynamic module for arch.
func Check(path, arch string, withModule bool) error {
	img, cleanup, err := readArchive(path)
	if err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	defer cleanup()
	if mt, err := img.MediaType(); err != nil || mt != types.OCIManifestSchema1 {
		return fmt.Errorf("image %s: manifest media type %q (%v), want %q", path, mt, err, types.OCIManifestSchema1)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return fmt.Errorf("config of %s: %w", path, err)
	}
	var errs []error
	if cf.Config.User != User {
		errs = append(errs, fmt.Errorf("user %q, want %q", cf.Config.User, User))
	}
	if !slices.Equal(cf.Config.Entrypoint, []string{BinaryPath}) {
		errs = append(errs, fmt.Errorf("entrypoint %q, want [%s]", cf.Config.Entrypoint, BinaryPath))
	}
	if cf.OS != OS || cf.Architecture != arch {
		errs = append(errs, fmt.Errorf("platform %s/%s, want %s/%s", cf.OS, cf.Architecture, OS, arch))
	}
	layers, err := img.Layers()
	if err != nil {
		return fmt.Errorf("layers of %s: %w", path, err)
	}
	if len(layers) != 1 {
		errs = append(errs, fmt.Errorf("%d layers, want 1 (an empty base)", len(layers)))
	}
	if len(layers) > 0 {
		if err := checkLayer(layers[0], arch, withModule); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("image %s: %w", path, errors.Join(errs...))
	}
	return nil
}

// checkLayer finds BinaryPath in a layer and checks it like checkBinary,
// and ModulePath (required with withModule) like checkModule.
func checkLayer(l v1.Layer, arch string, withModule bool) error {
	rc, err := l.Uncompressed()
	if err != nil {
		return err
	}
	defer rc.Close()
	tr := tar.NewReader(rc)
	var errs []error
	found := map[string]bool{}
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		var check func(string, string) error
		switch "/" + h.Name {
		case BinaryPath:
			if h.Mode&0o111 == 0 {
				errs = append(errs, fmt.Errorf("%s mode %o: not executable", BinaryPath, h.Mode))
			}
			check = checkBinary
		case ModulePath:
			check = checkModule
		default:
			continue
		}
		found["/"+h.Name] = true
		if err := checkEntry(tr, arch, check); err != nil {
			errs = append(errs, err)
		}
	}
	if !found[BinaryPath] {
		errs = append(errs, fmt.Errorf("no %s in the layer", BinaryPath))
	}
	if withModule && !found[ModulePath] {
		errs = append(errs, fmt.Errorf("no %s in the layer", ModulePath))
	}
	return errors.Join(errs...)
}

// checkEntry copies the current tar entry to a temporary file and runs
// check on it.
func checkEntry(tr *tar.Reader, arch string, check func(path, arch string) error) error {
	tmp, err := os.CreateTemp("", "thaw-image-check-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := io.Copy(tmp, tr); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return check(tmp.Name(), arch)
}
