package local

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/thaw-dev/thaw/revision"
	"github.com/thaw-dev/thaw/wake"
)

// scalar converts a YAML scalar (string, number or boolean, as decoded with
// json.Decoder.UseNumber) to the string ParseSettings and the duration
// parser expect. Numbers keep their literal text (1000000, not 1e+06).
func scalar(v any) (string, error) {
	switch x := v.(type) {
	case string:
		return x, nil
	case json.Number:
		return x.String(), nil
	case bool:
		return strconv.FormatBool(x), nil
	case nil:
		return "", errors.New("want a value")
	default:
		return "", errors.New("want a string or a number")
	}
}

// durationField parses a duration written as a Go duration ("500ms", "1m")
// or a bare finite number of seconds (revision.ParseDuration); nil gives
// def. Values below lo are rejected.
func durationField(errs *[]error, field string, v any, def, lo time.Duration) time.Duration {
	if v == nil {
		return def
	}
	s, err := scalar(v)
	d, perr := revision.ParseDuration(s)
	if err != nil || perr != nil || d < lo {
		*errs = append(*errs, &revision.FieldError{Field: field, Value: fmt.Sprint(v),
			Allowed: fmt.Sprintf(`a duration >= %s such as "500ms" or a finite number of seconds`, lo)})
		return def
	}
	return d
}

// specErrors flattens ParseSettings' joined errors and names each field by
// its path in the file: hosts, port, protocol and traffic.* stay as they
// are, settings become "autoscaling.<key>".
func specErrors(err error) []error {
	var out []error
	var walk func(error)
	walk = func(e error) {
		if j, ok := e.(interface{ Unwrap() []error }); ok {
			for _, c := range j.Unwrap() {
				walk(c)
			}
			return
		}
		var fe *revision.FieldError
		if errors.As(e, &fe) {
			cp := *fe
			if cp.Field != "hosts" && cp.Field != "port" && cp.Field != revision.KeyProtocol &&
				cp.Field != revision.FieldTrafficPercent && cp.Field != revision.FieldTag {
				cp.Field = "autoscaling." + cp.Field
			}
			out = append(out, &cp)
			return
		}
		out = append(out, e)
	}
	walk(err)
	return out
}

// jsonFieldError turns a decoding error into a FieldError naming the field
// where possible ("unknown field", wrong type).
func jsonFieldError(err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return &revision.FieldError{Field: te.Field, Value: te.Value, Allowed: "a value of type " + yamlType(te.Type.String())}
	}
	if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		name, _ = strconv.Unquote(name)
		return &revision.FieldError{Field: name, Value: "", Allowed: "a known field name (this one is unknown)"}
	}
	return err
}

func yamlType(goType string) string {
	switch {
	case strings.HasPrefix(goType, "[]"):
		return "list"
	case strings.HasPrefix(goType, "map["), strings.HasPrefix(goType, "local."), strings.HasPrefix(goType, "struct"):
		return "map"
	default:
		return goType
	}
}

// parseTraffic returns a revision's traffic percent (nil when not given)
// and tag. A percent that is not an integer 0..100 is reported through bad
// (the tag is checked with the rest of the spec).
func parseTraffic(tf *trafficFile, bad func(field, value, allowed string)) (*int32, string) {
	if tf.Percent == nil {
		return nil, tf.Tag
	}
	s, err := scalar(tf.Percent)
	if err == nil {
		var p int32
		if p, err = revision.ParseTrafficPercent(s); err == nil {
			return &p, tf.Tag
		}
	}
	bad(revision.FieldTrafficPercent, fmt.Sprint(tf.Percent), "an integer 0..100")
	return nil, tf.Tag
}

// parseWake compiles a revision's wake policy; its problems are reported
// as *revision.FieldError values under "wake.".
func parseWake(c *wake.Config, errs []error) (*wake.Policy, []error) {
	p, werrs := revision.CompileWake("wake.", c)
	return p, append(errs, werrs...)
}
