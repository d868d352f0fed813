package main

import (
	"archive/tar"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
)

// dockerManifest is one entry of the manifest.json `docker load` reads;
// its paths point into the OCI layout's blobs, as `docker save` has done
// since Docker 25.
type dockerManifest struct {
	Config   string
	RepoTags []string
	Layers   []string
}

// maxArchive bounds what readArchive extracts (an image of one binary).
const maxArchive = 1 << 30

// writeArchive writes img as an OCI image layout (oci-layout, index.json,
// blobs/sha256/...) in a tar file, with the tag as the
// org.opencontainers.image.ref.name annotation, plus manifest.json so
// `docker load` reads it too. File order and times are fixed.
func writeArchive(out string, tag name.Tag, img v1.Image) error {
	dir, err := os.MkdirTemp("", "thaw-image-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return err
	}
	if err := p.AppendImage(img, layout.WithAnnotations(map[string]string{
		"org.opencontainers.image.ref.name": tag.TagStr(),
		"io.containerd.image.name":          tag.Name(),
	})); err != nil {
		return err
	}
	cfg, err := img.ConfigName()
	if err != nil {
		return err
	}
	layers, err := img.Layers()
	if err != nil {
		return err
	}
	dm := dockerManifest{Config: blobPath(cfg), RepoTags: []string{tag.Name()}}
	for _, l := range layers {
		d, err := l.Digest()
		if err != nil {
			return err
		}
		dm.Layers = append(dm.Layers, blobPath(d))
	}
	b, err := json.Marshal([]dockerManifest{dm})
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "manifest.json"), b, 0o644); err != nil {
		return err
	}
	return tarDir(dir, out)
}

func blobPath(h v1.Hash) string { return path.Join("blobs", h.Algorithm, h.Hex) }

// tarDir writes the regular files and directories under dir into a tar
// file, in lexical order, with fixed times and owners.
func tarDir(dir, out string) error {
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	tw := tar.NewWriter(f)
	werr := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		h := &tar.Header{Name: filepath.ToSlash(rel), ModTime: epoch, Format: tar.FormatPAX}
		if d.IsDir() {
			h.Typeflag, h.Name, h.Mode = tar.TypeDir, h.Name+"/", 0o755
			return tw.WriteHeader(h)
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		h.Typeflag, h.Mode, h.Size = tar.TypeReg, 0o644, info.Size()
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		src, err := os.Open(p)
		if err != nil {
			return err
		}
		defer src.Close()
		_, err = io.Copy(tw, src)
		return err
	})
	return errors.Join(werr, tw.Close(), f.Close())
}

// readArchive extracts an archive written by writeArchive into a
// temporary directory and returns its only image, read lazily from that
// directory until cleanup is called. It refuses paths that leave the
// directory, links, more than maxArchive bytes, and a missing or
// inconsistent manifest.json.
func readArchive(archive string) (img v1.Image, cleanup func(), err error) {
	dir, err := os.MkdirTemp("", "thaw-image-check-")
	if err != nil {
		return nil, nil, err
	}
	cleanup = func() { os.RemoveAll(dir) }
	img, err = extractImage(archive, dir)
	if err != nil {
		cleanup()
		return nil, nil, err
	}
	return img, cleanup, nil
}

func extractImage(archive, dir string) (v1.Image, error) {
	f, err := os.Open(archive)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	tr := tar.NewReader(f)
	var total int64
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		clean := path.Clean(h.Name)
		if path.IsAbs(clean) || clean == ".." || strings.HasPrefix(clean, "../") {
			return nil, fmt.Errorf("entry %q leaves the archive", h.Name)
		}
		target := filepath.Join(dir, filepath.FromSlash(clean))
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(target, 0o755); err != nil {
				return nil, err
			}
		case tar.TypeReg:
			if total += h.Size; total > maxArchive {
				return nil, fmt.Errorf("archive larger than %d bytes", maxArchive)
			}
			if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
				return nil, err
			}
			w, err := os.Create(target)
			if err != nil {
				return nil, err
			}
			_, cerr := io.Copy(w, io.LimitReader(tr, h.Size))
			if err := errors.Join(cerr, w.Close()); err != nil {
				return nil, err
			}
		default:
			return nil, fmt.Errorf("entry %q: type %c not allowed", h.Name, h.Typeflag)
		}
	}
	b, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
	if err != nil {
		return nil, fmt.Errorf("no manifest.json for docker load: %w", err)
	}
	var dms []dockerManifest
	if err := json.Unmarshal(b, &dms); err != nil || len(dms) != 1 || len(dms[0].RepoTags) != 1 {
		return nil, fmt.Errorf("manifest.json %s: want one image with one tag", b)
	}
	idx, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		return nil, err
	}
	im, err := idx.IndexManifest()
	if err != nil {
		return nil, err
	}
	if len(im.Manifests) != 1 {
		return nil, fmt.Errorf("index.json lists %d manifests, want 1", len(im.Manifests))
	}
	if got := im.Manifests[0].Annotations["io.containerd.image.name"]; got != dms[0].RepoTags[0] {
		return nil, fmt.Errorf("index names the image %q, manifest.json %q", got, dms[0].RepoTags[0])
	}
	return idx.Image(im.Manifests[0].Digest)
}
