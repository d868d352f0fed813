package local

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/thaw-dev/thaw/revision"
	"github.com/thaw-dev/thaw/wake"
)

// DefaultNamespace is the namespace of a revision whose entry names none.
const DefaultNamespace = "local"

// PortPlaceholder is replaced in every command argument by the port the
// process must listen on (the same value as its PORT environment variable).
const PortPlaceholder = "{port}"

// Probe and stop defaults.
const (
	DefaultProbePeriod           = time.Second
	DefaultProbeTimeout          = time.Second
	DefaultProbeFailureThreshold = 3
	DefaultStopTimeout           = 10 * time.Second
)

// Config is a parsed local platform file.
type Config struct {
	// Path is the file the configuration came from, as given to Load.
	Path string
	// Revisions holds the valid revisions, in file order.
	Revisions []RevisionConfig
	// Invalid holds the revisions that were rejected, by key, each with a
	// *RevisionError. Entries without a usable key (no name, a duplicate
	// name) are only in Errors.
	Invalid map[revision.Key]error
	// Errors lists every rejected entry's *RevisionError in file order.
	Errors []error
	// FastJSON is true when the file was plain JSON, read without the
	// YAML parser (jsonfast.go).
	FastJSON bool
}

// Err returns every rejected entry's error joined, or nil when all
// revisions are valid.
func (c *Config) Err() error { return errors.Join(c.Errors...) }

// RevisionConfig is one valid revision of the file.
type RevisionConfig struct {
	Key revision.Key
	// Spec holds the hosts and the autoscaling settings (validated; Port 0:
	// every backend has its own port).
	Spec revision.Spec
	// Command is the program and its arguments; PortPlaceholder is still
	// present (it is substituted per process). A relative program path that
	// contains a slash was made absolute against Dir.
	Command []string
	// Dir is the absolute working directory of the processes.
	Dir string
	// Env is added to thaw's own environment; PORT, THAW_REVISION and
	// THAW_INSTANCE are set by the platform on top.
	Env map[string]string
	// Readiness says when a process is a backend.
	Readiness Probe
	// StopTimeout is how long a process may take to exit after SIGTERM
	// before it gets SIGKILL.
	StopTimeout time.Duration
}

// Probe is a readiness probe against 127.0.0.1:<port>.
type Probe struct {
	// HTTPPath, when set, makes it an HTTP GET probe that passes on a 2xx or
	// 3xx status; empty means a TCP connect probe.
	HTTPPath string
	// Period is the time between probes of a started instance.
	Period time.Duration
	// Timeout bounds one probe.
	Timeout time.Duration
	// FailureThreshold is how many consecutive failures make a ready
	// instance not ready again.
	FailureThreshold int
}

// RevisionError is why one entry of a file was rejected. Errs are usually
// *revision.FieldError values whose Field is the path inside the entry
// ("command", "readiness.period", "autoscaling.target"); errors.As finds
// them and errors.Is(err, revision.ErrInvalidSpec) holds for them.
type RevisionError struct {
	File string
	// Revision is "namespace/name", or "#N" (1-based position) for an
	// entry without a name.
	Revision string
	Errs     []error
}

// Error returns "FILE: revision R: problem; problem".
func (e *RevisionError) Error() string {
	msgs := make([]string, len(e.Errs))
	for i, err := range e.Errs {
		msgs[i] = err.Error()
	}
	return fmt.Sprintf("%s: revision %s: %s", e.File, e.Revision, strings.Join(msgs, "; "))
}

// Unwrap returns the individual problems.
func (e *RevisionError) Unwrap() []error { return e.Errs }

// file is the YAML layout. Scalars that users write either as numbers or as
// strings are decoded as any and converted with scalar.
type file struct {
	Revisions []json.RawMessage `json:"revisions"`
}

type revisionFile struct {
	Name        string         `json:"name"`
	Namespace   string         `json:"namespace"`
	Hosts       []string       `json:"hosts"`
	Protocol    string         `json:"protocol"`
	Command     []string       `json:"command"`
	WorkingDir  string         `json:"workingDir"`
	Env         map[string]any `json:"env"`
	Readiness   *probeFile     `json:"readiness"`
	StopTimeout any            `json:"stopTimeout"`
	Autoscaling map[string]any `json:"autoscaling"`
	Traffic     *trafficFile   `json:"traffic"`
	// Wake is the revision's wake policy (docs/configuration.md, "Wake
	// policy").
	Wake *wake.Config `json:"wake"`
}

// trafficFile is a revision's place in a traffic split (see
// docs/traffic-splitting.md).
type trafficFile struct {
	Percent any    `json:"percent"`
	Tag     string `json:"tag"`
}

type probeFile struct {
	Path             string `json:"path"`
	TCP              bool   `json:"tcp"`
	Period           any    `json:"period"`
	Timeout          any    `json:"timeout"`
	FailureThreshold any    `json:"failureThreshold"`
}

// Load reads a local platform file. defaults is the base Spec every
// revision's autoscaling settings apply onto (usually revision.DefaultSpec()
// with global overrides). It returns an error only when the file cannot be
// read or is not a YAML document with a "revisions" list; a rejected
// revision does not fail Load: it is reported in Config.Invalid and
// Config.Errors while the valid ones are returned.
func Load(path string, defaults revision.Spec) (*Config, error) {
	return LoadWithin(path, defaults, revision.Limits{})
}

// LoadWithin is Load validating every revision against lim as well (see
// revision.ParseSettingsWithin).
func LoadWithin(path string, defaults revision.Spec, lim revision.Limits) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("local platform config: %w", err)
	}
	base, err := filepath.Abs(filepath.Dir(path))
	if err != nil {
		return nil, fmt.Errorf("local platform config %s: %w", path, err)
	}
	return ParseWithin(path, base, data, defaults, lim)
}

// Parse is Load for data already read: name is used in error messages and
// relative working directories are resolved against baseDir.
func Parse(name, baseDir string, data []byte, defaults revision.Spec) (*Config, error) {
	return ParseWithin(name, baseDir, data, defaults, revision.Limits{})
}

// ParseWithin is Parse validating every revision against lim as well. A
// key written twice in one YAML map fails the whole file (the error names
// its line): which of the two values was meant cannot be told.
//
// A file that is plain JSON with no problem (plainJSON) is decoded without
// the YAML parser, to the same result; any other file, and any problem,
// takes the YAML path.
func ParseWithin(name, baseDir string, data []byte, defaults revision.Spec, lim revision.Limits) (*Config, error) {
	return parseWithin(name, baseDir, data, defaults, lim, true)
}

// parseWithin is ParseWithin; fast false always takes the YAML path (the
// fuzz test compares both).
func parseWithin(name, baseDir string, data []byte, defaults revision.Spec, lim revision.Limits, fast bool) (*Config, error) {
	var decoded []revisionFile
	ok := false
	if fast {
		decoded, ok = decodeJSONFast(data)
	}
	fastOK := ok
	var f file
	if !ok {
		js, err := yamlToJSON(data)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		if decoded, ok = decodeAll(js); !ok {
			if err := decodeStrict(js, &f); err != nil {
				return nil, fmt.Errorf("%s: %w", name, jsonFieldError(err))
			}
		}
	}
	n := len(f.Revisions)
	if ok {
		n = len(decoded)
	}
	cfg := &Config{Path: name, Invalid: map[revision.Key]error{}, FastJSON: fastOK}
	seen := map[revision.Key]bool{}
	hostOwner := map[string]hostUser{}
	for i := range n {
		var rc RevisionConfig
		var key revision.Key
		var errs []error
		if ok {
			rc, key, errs = checkRevision(decoded[i], baseDir, defaults, lim)
		} else {
			rc, key, errs = parseRevision(f.Revisions[i], baseDir, defaults, lim)
		}
		label := fmt.Sprintf("#%d", i+1)
		if key.Name != "" {
			label = key.String()
		}
		switch {
		case key.Name == "":
		case seen[key]:
			errs = append([]error{&revision.FieldError{Field: "name", Value: key.Name,
				Allowed: "a name no earlier revision in the namespace uses"}}, errs...)
			key = revision.Key{} // do not clobber the first one's state
		default:
			seen[key] = true
		}
		if len(errs) == 0 {
			for _, h := range rc.Spec.Hosts {
				// A host shared by revisions with a traffic percent is a
				// split: the xds translation checks it as a whole (every
				// member with a percent, summing to 100) and reports it.
				owner, taken := hostOwner[h]
				if taken && owner.percent == nil && rc.Spec.TrafficPercent == nil {
					errs = append(errs, &revision.FieldError{Field: "hosts", Value: h,
						Allowed: "a host no other revision uses (" + owner.key.String() + " has it; revisions splitting a host set traffic.percent)"})
				}
			}
		}
		if len(errs) > 0 {
			rerr := &RevisionError{File: name, Revision: label, Errs: errs}
			cfg.Errors = append(cfg.Errors, rerr)
			if key.Name != "" {
				cfg.Invalid[key] = rerr
			}
			continue
		}
		for _, h := range rc.Spec.Hosts {
			if _, taken := hostOwner[h]; !taken {
				hostOwner[h] = hostUser{key: key, percent: rc.Spec.TrafficPercent}
			}
		}
		cfg.Revisions = append(cfg.Revisions, rc)
	}
	return cfg, nil
}

// hostUser is the first revision of a file that lists a host.
type hostUser struct {
	key     revision.Key
	percent *int32
}

// parseRevision returns the revision, its key (Name empty when it has none)
// and every problem found.
func parseRevision(raw json.RawMessage, baseDir string, defaults revision.Spec, lim revision.Limits) (RevisionConfig, revision.Key, []error) {
	var rf revisionFile
	if err := decodeStrict(raw, &rf); err != nil {
		// A lenient second pass finds the name even when a field is
		// malformed, so the error can name the revision.
		rf = revisionFile{}
		_ = json.Unmarshal(raw, &rf)
		return RevisionConfig{}, revisionKey(rf), []error{jsonFieldError(err)}
	}
	return checkRevision(rf, baseDir, defaults, lim)
}

// checkRevision validates one decoded entry and builds its config: the
// revision's key and every field error found (none: the config is valid).
func checkRevision(rf revisionFile, baseDir string, defaults revision.Spec, lim revision.Limits) (RevisionConfig, revision.Key, []error) {
	key := revisionKey(rf)
	var errs []error
	bad := func(field, value, allowed string) {
		errs = append(errs, &revision.FieldError{Field: field, Value: value, Allowed: allowed})
	}
	if rf.Name == "" {
		bad("name", "", "a DNS label (lower case letters, digits and '-')")
	} else if msgs := validation.IsDNS1123Label(rf.Name); len(msgs) > 0 {
		bad("name", rf.Name, "a DNS label ("+msgs[0]+")")
	}
	if rf.Namespace != "" {
		if msgs := validation.IsDNS1123Label(rf.Namespace); len(msgs) > 0 {
			bad("namespace", rf.Namespace, "a DNS label ("+msgs[0]+")")
		}
	}

	rc := RevisionConfig{Key: key, Env: map[string]string{}}
	base := defaults
	base.Hosts = rf.Hosts
	base.Port = 0
	settings := map[string]string{}
	for k, v := range rf.Autoscaling {
		s, err := scalar(v)
		if !revision.IsSetting(k) {
			// Nothing but settings belongs here: unlike annotations, a key
			// under another prefix (or an unknown Knative key) is a typo.
			bad("autoscaling."+k, fmt.Sprint(v), "a setting name, bare or under "+revision.ThawPrefix+" or "+revision.KnativePrefix+
				" (see docs/configuration.md)")
			continue
		}
		if err != nil {
			bad("autoscaling."+k, fmt.Sprint(v), err.Error())
			continue
		}
		settings[k] = s
	}
	if rf.Protocol != "" {
		if _, dup := settings[revision.KeyProtocol]; dup {
			bad("protocol", rf.Protocol, "set once: either protocol or autoscaling.protocol")
		}
		settings[revision.KeyProtocol] = rf.Protocol
	}
	if rf.Traffic != nil {
		base.TrafficPercent, base.Tag = parseTraffic(rf.Traffic, bad)
	}
	spec, err := revision.ParseSettingsWithin(base, settings, lim)
	if err != nil {
		errs = append(errs, specErrors(err)...)
	}
	spec.Wake, errs = parseWake(rf.Wake, errs)
	rc.Spec = spec

	rc.Dir = baseDir
	if rf.WorkingDir != "" {
		rc.Dir = rf.WorkingDir
		if !filepath.IsAbs(rc.Dir) {
			rc.Dir = filepath.Join(baseDir, rc.Dir)
		}
	}
	if st, err := os.Stat(rc.Dir); err != nil || !st.IsDir() {
		bad("workingDir", rf.WorkingDir, "an existing directory (relative to the file's directory)")
	}
	if len(rf.Command) == 0 || rf.Command[0] == "" {
		bad("command", strings.Join(rf.Command, " "), "a program and its arguments, e.g. [./bin/workload, --port, \"{port}\"]")
	} else {
		rc.Command = append([]string(nil), rf.Command...)
		if strings.Contains(rc.Command[0], "/") && !filepath.IsAbs(rc.Command[0]) {
			rc.Command[0] = filepath.Join(rc.Dir, rc.Command[0])
		}
	}
	for k, v := range rf.Env {
		s, err := scalar(v)
		switch {
		case k == "" || strings.ContainsAny(k, "=\x00"):
			bad("env", k, "a variable name without '='")
		case k == "PORT" || k == "THAW_REVISION" || k == "THAW_INSTANCE":
			bad("env."+k, fmt.Sprint(v), "unset: thaw sets it per process")
		case err != nil:
			bad("env."+k, fmt.Sprint(v), err.Error())
		default:
			rc.Env[k] = s
		}
	}
	rc.Readiness, errs = parseProbe(rf.Readiness, errs)
	rc.StopTimeout = durationField(&errs, "stopTimeout", rf.StopTimeout, DefaultStopTimeout, 0)
	return rc, key, errs
}

func parseProbe(pf *probeFile, errs []error) (Probe, []error) {
	p := Probe{Period: DefaultProbePeriod, Timeout: DefaultProbeTimeout, FailureThreshold: DefaultProbeFailureThreshold}
	if pf == nil {
		return p, errs
	}
	if pf.Path != "" && pf.TCP {
		errs = append(errs, &revision.FieldError{Field: "readiness", Value: "path and tcp", Allowed: "either path (HTTP GET) or tcp: true"})
	}
	if pf.Path != "" && !strings.HasPrefix(pf.Path, "/") {
		errs = append(errs, &revision.FieldError{Field: "readiness.path", Value: pf.Path, Allowed: "an absolute URL path such as /healthz"})
	}
	p.HTTPPath = pf.Path
	p.Period = durationField(&errs, "readiness.period", pf.Period, DefaultProbePeriod, time.Millisecond)
	p.Timeout = durationField(&errs, "readiness.timeout", pf.Timeout, DefaultProbeTimeout, time.Millisecond)
	if pf.FailureThreshold != nil {
		s, err := scalar(pf.FailureThreshold)
		var n int
		if err == nil {
			_, err = fmt.Sscanf(s, "%d", &n)
		}
		if err != nil || n < 1 || fmt.Sprint(n) != s {
			errs = append(errs, &revision.FieldError{Field: "readiness.failureThreshold", Value: s, Allowed: "an integer >= 1"})
		} else {
			p.FailureThreshold = n
		}
	}
	return p, errs
}

func decodeStrict(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	dec.UseNumber()
	return dec.Decode(v)
}

// revisionKey is the key an entry names (DefaultNamespace when it names
// none).
func revisionKey(rf revisionFile) revision.Key {
	key := revision.Key{Namespace: rf.Namespace, Name: rf.Name}
	if key.Namespace == "" {
		key.Namespace = DefaultNamespace
	}
	return key
}
