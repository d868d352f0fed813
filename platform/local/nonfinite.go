package local

import (
	"encoding/json"
	"errors"
	"math"
	"strconv"
	"strings"

	yamlv3 "go.yaml.in/yaml/v3"
	"sigs.k8s.io/yaml"
)

// yamlToJSON converts the file to JSON, refusing duplicate keys. JSON has
// no infinity or NaN, so YAML's .inf, -.inf and .nan (floats to YAML) would
// fail the whole file with "json: unsupported value: +Inf"; they are kept
// as the strings written instead, and the field's own parser then rejects
// that one revision, naming it and the field.
func yamlToJSON(data []byte) ([]byte, error) {
	js, err := yaml.YAMLToJSONStrict(data)
	var unsupported *json.UnsupportedValueError
	if !errors.As(err, &unsupported) {
		return js, err
	}
	var doc yamlv3.Node
	if uerr := yamlv3.Unmarshal(data, &doc); uerr != nil {
		return nil, err
	}
	quoteNonFinite(&doc)
	out, merr := yamlv3.Marshal(&doc)
	if merr != nil {
		return nil, err
	}
	return yaml.YAMLToJSONStrict(out)
}

// quoteNonFinite turns every scalar that YAML reads as an infinite or NaN
// float into a string scalar with the same text.
func quoteNonFinite(n *yamlv3.Node) {
	if n.Kind == yamlv3.ScalarNode && n.ShortTag() == "!!float" && nonFinite(n.Value) {
		n.Tag, n.Style = "!!str", yamlv3.DoubleQuotedStyle
	}
	for _, c := range n.Content {
		quoteNonFinite(c)
	}
}

// nonFinite reports whether a YAML float literal is infinite or NaN
// (".inf", "-.Inf", ".NaN", ...; YAML 1.1 spellings strconv does not know).
func nonFinite(v string) bool {
	switch strings.ToLower(strings.TrimLeft(v, "+-")) {
	case ".inf", ".nan":
		return true
	}
	f, err := strconv.ParseFloat(v, 64)
	return err == nil && (math.IsInf(f, 0) || math.IsNaN(f))
}
