package local

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/thaw-dev/thaw/revision"
)

// TestPlainJSON: which files take the fast path, and the number texts it
// rewrites to what the YAML path gives.
func TestPlainJSON(t *testing.T) {
	for _, tc := range []struct {
		name, doc string
		ok        bool
		want      string // "" when equal to doc
	}{
		{"empty object", `{}`, true, ""},
		{"blank around", " \r\n{\"revisions\": []}\n\n", true, ""},
		{"tabs inside", "{\t\"revisions\":\t[ ]\t}", true, ""},
		{"compact", `{"revisions":[{"name":"a","env":{"A":"1"}}]}`, true, ""},
		{"numbers kept", `{"a":[0,-1,123456789012345678,true,false,null]}`, true, ""},
		{"numbers as YAML reads them", `{"a":[1.0,-0,1e2,1.5,18446744073709551615,99999999999999999999,0.0000001]}`, true,
			`{"a":[1,0,100,1.5,18446744073709551615,100000000000000000000,1e-7]}`},
		{"escapes", `{"a":"\"\\\b\f\n\r\t\u00e9\u0000"}`, true, ""},
		{"non-ASCII", `{"a":"é 😀"}`, true, ""},
		{"YAML flow mapping", `{revisions: []}`, false, ""},
		{"not an object", `[1]`, false, ""},
		{"tab before", "\t{}", false, ""},
		{"tab after", "{}\t", false, ""},
		{"trailing value", `{} {}`, false, ""},
		{"trailing comma", `{"a":1,}`, false, ""},
		{"duplicate key", `{"a":1,"a":2}`, false, ""},
		{"keys equal but for case", `{"name":"a","Name":"b"}`, false, ""},
		{"nested duplicate", `{"a":{"b":1,"b":1}}`, false, ""},
		{"same key in siblings", `{"a":{"b":1},"c":{"b":1}}`, true, ""},
		{"escaped key", `{"\u0061":1}`, false, ""},
		{"slash escape", `{"a":"\/"}`, false, ""},
		{"surrogate escape", `{"a":"\ud83d\ude00"}`, false, ""},
		{"DEL", "{\"a\":\"\x7f\"}", false, ""},
		{"NEL", "{\"a\":\"\u0085\"}", false, ""},
		{"line separator", "{\"a\":\"\u2028\"}", false, ""},
		{"invalid UTF-8", "{\"a\":\"\xff\"}", false, ""},
		{"key then line break", "{\"a\"\n:1}", false, ""},
		{"long key", `{"` + strings.Repeat("k", 1000) + `":1}`, false, ""},
		{"float out of range", `{"a":1e400}`, false, ""},
		{"leading zero", `{"a":01}`, false, ""},
		{"too deep", strings.Repeat(`{"a":`, 65) + "1" + strings.Repeat("}", 65), false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			js, ok := plainJSON([]byte(tc.doc))
			if ok != tc.ok {
				t.Fatalf("plainJSON ok = %v, want %v", ok, tc.ok)
			}
			want := tc.want
			if want == "" {
				want = tc.doc
			}
			if ok && string(js) != want {
				t.Errorf("plainJSON = %s, want %s", js, want)
			}
		})
	}
}

// jsonFastSeeds are JSON files for both paths: valid, with bad entries,
// and with what only the YAML path may answer.
var jsonFastSeeds = []string{
	`{"revisions":[{"name":"a","hosts":["a.localhost"],"command":["x","{port}"],"env":{"A":1.0,"B":"b"},"readiness":{"path":"/h","period":"1s","failureThreshold":3.0},"stopTimeout":5,"autoscaling":{"initial-scale":"0","target":1e2}}]}`,
	`{"revisions":[{"name":"a","hosts":["a.localhost"],"command":["x"],"traffic":{"percent":50.0,"tag":"t"}},{"name":"b","hosts":["a.localhost"],"command":["x"],"traffic":{"percent":50}}]}`,
	`{"revisions":[{"name":"a","hosts":["a.localhost"],"command":["x"],"wake":{"rules":[{"name":"r","path":"/x","response":{"status":200.0}}]}}]}`,
	`{"revisions":[{"name":"a","command":["x"],"colour":"blue"},{"name":"b","command":["x"]}]}`,
	`{"revisions":[{"name":"a","command":7},{"name":"b","command":["x"],"Name":"c"}]}`,
	`{"revisions":[{"name":"a","command":["x"],"autoscaling":{"target":1,"target":2}}]}`,
	`{"revisions":[{"name":"a","command":["x"],"env":{"A":"\/"}}], "revisions": []}`,
	`{"revisions":[{"name":"a","command":["x"],"readiness":{"failureThreshold":99999999999999999999}}]}`,
	`{"revisions":[{"name":"a","command":["x"],"env":{"A":-0,"B":1e-7,"C":"\u00e9"}}]}`,
	"{\n\"revisions\":\t[\n{\"name\": \"a\",\n\"command\": [\"x\"],\r\n\t\"env\" : {\"A\":\"\\u00e9\\n\", \"B\": \"x\"}\n}\n]\n}\n",
	`{"revisions":null}`, `{}`, `{"revisions":3}`, `{"revisions":[7,null]}`,
}

// TestJSONFastPathAgrees: on every seed both paths give the same outcome.
func TestJSONFastPathAgrees(t *testing.T) {
	dir := t.TempDir()
	for i, doc := range jsonFastSeeds {
		if msg := comparePaths(dir, doc); msg != "" {
			t.Errorf("seed %d: %s", i, msg)
		}
	}
	// The valid ones, compact or spread over lines with tabs, with
	// numbers YAML rewrites, take the fast path (so they were compared).
	for _, i := range []int{0, 1, 2, 8, 9, 10, 11} {
		if _, ok := decodeJSONFast([]byte(jsonFastSeeds[i])); !ok {
			t.Errorf("seed %d did not take the fast path", i)
		}
	}
}

// FuzzJSONFastPath: for any file, parsing with the JSON fast path and
// parsing through YAML agree: both accept or both refuse (same message),
// with equal revisions and equal rejected entries. `go test` runs only the
// seeds.
func FuzzJSONFastPath(f *testing.F) {
	for _, doc := range jsonFastSeeds {
		f.Add(doc)
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, doc string) {
		if msg := comparePaths(dir, doc); msg != "" {
			t.Fatal(msg)
		}
	})
}

// comparePaths parses doc both ways and describes the first difference
// ("" when none).
func comparePaths(dir, doc string) string {
	if _, ok := decodeJSONFast([]byte(doc)); !ok {
		// Both take the YAML path. (That path is not always
		// deterministic: YAML keys 0 and "0" in one map both become
		// "0", and which value stays depends on map order.)
		return ""
	}
	lim := revision.Limits{HoldBudget: time.Minute}
	fast, ferr := parseWithin("f.json", dir, []byte(doc), revision.DefaultSpec(), lim, true)
	slow, serr := parseWithin("f.json", dir, []byte(doc), revision.DefaultSpec(), lim, false)
	if (ferr == nil) != (serr == nil) || ferr != nil && ferr.Error() != serr.Error() {
		return fmt.Sprintf("fast path error %v, YAML path error %v", ferr, serr)
	}
	if ferr != nil {
		return ""
	}
	if diff := cmp.Diff(slow.Revisions, fast.Revisions, cmpopts.EquateEmpty(), cmp.Exporter(func(reflect.Type) bool { return true }),
		cmp.Comparer(func(a, b *regexp.Regexp) bool {
			return (a == nil) == (b == nil) && (a == nil || a.String() == b.String())
		})); diff != "" {
		return "revisions differ (-YAML +fast):\n" + diff
	}
	if a, b := errorTexts(slow.Errors), errorTexts(fast.Errors); !slices.Equal(a, b) {
		return fmt.Sprintf("rejected entries differ: YAML %q, fast %q", a, b)
	}
	if len(slow.Invalid) != len(fast.Invalid) {
		return fmt.Sprintf("invalid keys differ: YAML %d, fast %d", len(slow.Invalid), len(fast.Invalid))
	}
	return ""
}

// errorTexts renders rejected entries with each entry's problems sorted
// (they come from map walks, in no set order).
func errorTexts(errs []error) []string {
	out := make([]string, len(errs))
	for i, err := range errs {
		var re *RevisionError
		if !errors.As(err, &re) {
			out[i] = err.Error()
			continue
		}
		msgs := make([]string, len(re.Errs))
		for j, e := range re.Errs {
			msgs[j] = e.Error()
		}
		slices.Sort(msgs)
		out[i] = re.File + " " + re.Revision + ": " + strings.Join(msgs, "; ")
	}
	return out
}

// TestLooksJSON: a file starting with '{' after blanks is a fast path
// candidate; YAML, a missing file and an empty one are not. Config.FastJSON
// tells which path read the file.
func TestLooksJSON(t *testing.T) {
	dir := t.TempDir()
	for doc, want := range map[string]bool{
		"\n  {\"revisions\": []}": true,
		"{revisions: []}":         true, // a candidate; the scan sends it to YAML
		"revisions: []\n":         false,
		"# {\n":                   false,
		"":                        false,
	} {
		p := filepath.Join(dir, "c")
		if err := os.WriteFile(p, []byte(doc), 0o600); err != nil {
			t.Fatal(err)
		}
		if got := LooksJSON(p); got != want {
			t.Errorf("LooksJSON(%q) = %v, want %v", doc, got, want)
		}
		cfg, err := Load(p, revision.DefaultSpec())
		if err != nil {
			t.Fatalf("%q: %v", doc, err)
		}
		if wantFast := doc == "\n  {\"revisions\": []}"; cfg.FastJSON != wantFast {
			t.Errorf("%q: FastJSON %v, want %v", doc, cfg.FastJSON, wantFast)
		}
	}
	if LooksJSON(filepath.Join(dir, "absent")) {
		t.Error("LooksJSON of a missing file")
	}
}
