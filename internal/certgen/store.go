package certgen

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// Default Secret (and directory) names; the cert-manager component in
// manifests/components/cert-manager produces the same.
const (
	DefaultCASecret     = "thaw-ca"
	DefaultServerSecret = "thaw-server-tls"
	DefaultEnvoySecret  = "thaw-envoy-tls"
)

// Keys of a kubernetes.io/tls Secret (ca.crt as cert-manager writes it).
const (
	KeyCert = corev1.TLSCertKey       // tls.crt
	KeyKey  = corev1.TLSPrivateKeyKey // tls.key
	KeyCA   = "ca.crt"
)

// Names are the Secret (or directory) names of a Set.
type Names struct{ CA, Server, Envoy string }

// DefaultNames returns the default Secret names.
func DefaultNames() Names {
	return Names{CA: DefaultCASecret, Server: DefaultServerSecret, Envoy: DefaultEnvoySecret}
}

func (n Names) each(s *Set) []struct {
	part, name string
	kp         *KeyPair
} {
	return []struct {
		part, name string
		kp         *KeyPair
	}{{"ca", n.CA, &s.CA}, {"server", n.Server, &s.Server}, {"envoy", n.Envoy, &s.Envoy}}
}

// Store loads and saves a Set.
type Store interface {
	// Load returns the stored set; absent parts are zero.
	Load(ctx context.Context) (Set, error)
	// Save writes the parts named in changed ("ca", "server", "envoy").
	Save(ctx context.Context, s Set, changed []string) error
}

// SecretStore keeps a Set in kubernetes.io/tls Secrets of one namespace.
// It needs get, create and update on Secrets there.
type SecretStore struct {
	Client    kubernetes.Interface
	Namespace string
	Names     Names
	// Labels are set on created Secrets.
	Labels map[string]string
}

var _ Store = (*SecretStore)(nil)

// Load implements Store.
func (st *SecretStore) Load(ctx context.Context) (Set, error) {
	var s Set
	for _, p := range st.Names.each(&s) {
		sec, err := st.Client.CoreV1().Secrets(st.Namespace).Get(ctx, p.name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return Set{}, fmt.Errorf("certgen: get Secret %s/%s: %w", st.Namespace, p.name, err)
		}
		*p.kp = KeyPair{Cert: sec.Data[KeyCert], Key: sec.Data[KeyKey], CA: sec.Data[KeyCA]}
	}
	return s, nil
}

// Save implements Store: it creates each changed Secret or updates its
// three keys (other keys and labels are kept). A concurrent writer makes
// the update fail with a conflict rather than be overwritten.
func (st *SecretStore) Save(ctx context.Context, s Set, changed []string) error {
	secrets := st.Client.CoreV1().Secrets(st.Namespace)
	for _, p := range st.Names.each(&s) {
		if !slices.Contains(changed, p.part) {
			continue
		}
		data := map[string][]byte{KeyCert: p.kp.Cert, KeyKey: p.kp.Key, KeyCA: p.kp.CA}
		cur, err := secrets.Get(ctx, p.name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			sec := &corev1.Secret{
				ObjectMeta: metav1.ObjectMeta{Name: p.name, Namespace: st.Namespace, Labels: st.Labels},
				Type:       corev1.SecretTypeTLS,
				Data:       data,
			}
			if _, err := secrets.Create(ctx, sec, metav1.CreateOptions{}); err != nil {
				return fmt.Errorf("certgen: create Secret %s/%s: %w", st.Namespace, p.name, err)
			}
		case err != nil:
			return fmt.Errorf("certgen: get Secret %s/%s: %w", st.Namespace, p.name, err)
		default:
			if cur.Data == nil {
				cur.Data = map[string][]byte{}
			}
			for k, v := range data {
				cur.Data[k] = v
			}
			if _, err := secrets.Update(ctx, cur, metav1.UpdateOptions{}); err != nil {
				return fmt.Errorf("certgen: update Secret %s/%s: %w", st.Namespace, p.name, err)
			}
		}
	}
	return nil
}

// DirStore keeps a Set as files: <Dir>/<name>/tls.crt, tls.key and ca.crt
// for each of Names, keys with mode 0600. Files are replaced by rename, so
// a reader (thaw's reloader, Envoy's file watch) never sees half a file.
type DirStore struct {
	Dir   string
	Names Names
}

var _ Store = (*DirStore)(nil)

// Load implements Store.
func (st *DirStore) Load(context.Context) (Set, error) {
	var s Set
	for _, p := range st.Names.each(&s) {
		for key, dst := range map[string]*[]byte{KeyCert: &p.kp.Cert, KeyKey: &p.kp.Key, KeyCA: &p.kp.CA} {
			b, err := os.ReadFile(filepath.Join(st.Dir, p.name, key))
			if errors.Is(err, os.ErrNotExist) {
				continue
			}
			if err != nil {
				return Set{}, fmt.Errorf("certgen: %w", err)
			}
			*dst = b
		}
	}
	return s, nil
}

// Save implements Store.
func (st *DirStore) Save(_ context.Context, s Set, changed []string) error {
	for _, p := range st.Names.each(&s) {
		if !slices.Contains(changed, p.part) {
			continue
		}
		dir := filepath.Join(st.Dir, p.name)
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return fmt.Errorf("certgen: %w", err)
		}
		// Key first: a reader that sees the new certificate finds its key.
		for _, f := range []struct {
			key  string
			data []byte
		}{{KeyKey, p.kp.Key}, {KeyCert, p.kp.Cert}, {KeyCA, p.kp.CA}} {
			if err := writeFileAtomic(filepath.Join(dir, f.key), f.data); err != nil {
				return err
			}
		}
	}
	return nil
}

func writeFileAtomic(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp-"+filepath.Base(path))
	if err != nil {
		return fmt.Errorf("certgen: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("certgen: write %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("certgen: write %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("certgen: %w", err)
	}
	return nil
}

// Run loads the set from st, ensures it at now (see Ensure) and saves the
// parts that changed, which it returns (none: nothing was written).
func Run(ctx context.Context, st Store, opts Options, now time.Time) ([]string, error) {
	cur, err := st.Load(ctx)
	if err != nil {
		return nil, err
	}
	next, changed, err := Ensure(cur, opts, now)
	if err != nil {
		return nil, err
	}
	if len(changed) == 0 {
		return nil, nil
	}
	return changed, st.Save(ctx, next, changed)
}
