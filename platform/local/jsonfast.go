package local

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"strconv"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"
)

// The JSON fast path. A file whose first non-blank byte is '{' may be
// JSON, which YAML reads too; the YAML path (yamlToJSON: parse, convert,
// marshal) was 13% of thaw's start CPU at 100,000 revisions. plainJSON
// reads such a file once with jsontext (the JSON grammar, UTF-8, duplicate
// names and nesting are the library's) and adds what only the YAML path
// cares about; only when both agree is it decoded directly. Anything it is
// not sure of (and every file that is not JSON, or that has a problem)
// goes down the YAML path, so every refusal, and its message, is the YAML
// path's own. FuzzJSONFastPath checks that both paths agree.

// Bounds of the fast path: past them the YAML path decides.
const (
	// fastMaxDepth bounds nesting (the file's own layout needs 6).
	fastMaxDepth = 64
	// fastMaxKeys bounds one object's keys: keys equal but for case are
	// looked for pairwise.
	fastMaxKeys = 64
	// fastMaxKeySpan bounds the bytes from a key's opening quote to its
	// ':' (YAML allows 1,024 characters for an implicit key).
	fastMaxKeySpan = 1000
)

// numEdit is a number literal that YAML reads to another text (1.0 is 1
// there, 1e2 is 100): n bytes at offset at become text.
type numEdit struct {
	at, n int
	text  string
}

// plainJSON returns data (numbers rewritten to the text the YAML path
// gives them, if any differs) when data is one JSON object that the YAML
// path reads to the same values and accepts: valid JSON and UTF-8, no
// character YAML refuses or reads as a line break, no escape YAML lacks
// (\/, surrogate halves), no key written twice (nor two keys equal but for
// case, which encoding/json would fold into one field), and keys on one
// line with their ':'. ok is false otherwise: the caller uses the YAML
// path.
func plainJSON(data []byte) (js []byte, ok bool) {
	// Around the document only spaces and line breaks (a tab there is an
	// error to YAML, in block context).
	lo, hi := 0, len(data)
	for lo < hi && isBlank(data[lo]) {
		lo++
	}
	for hi > lo && isBlank(data[hi-1]) {
		hi--
	}
	if lo == hi || data[lo] != '{' {
		return nil, false
	}
	doc := data[lo:hi]
	edits, ok := scanJSON(doc)
	if !ok {
		return nil, false
	}
	if len(edits) == 0 {
		return data, true
	}
	out := make([]byte, 0, len(data))
	last := 0
	for _, e := range edits {
		out = append(append(out, data[last:lo+e.at]...), e.text...)
		last = lo + e.at + e.n
	}
	return append(out, data[last:]...), true
}

func isBlank(c byte) bool { return c == ' ' || c == '\n' || c == '\r' }

// scanJSON reads doc, one JSON value and nothing else, token by token
// and checks what jsontext leaves to us; it returns the number edits in
// file order (offsets into doc).
func scanJSON(doc []byte) (edits []numEdit, ok bool) {
	dec := jsontext.NewDecoder(bytes.NewBuffer(doc))
	// keys holds the names of the objects being read, innermost last;
	// marks where each open object's names start.
	var keys [][]byte
	var marks []int
	for {
		kind := dec.PeekKind()
		if kind == 0 {
			return nil, false
		}
		switch kind {
		case '{', '[':
			if dec.StackDepth() >= fastMaxDepth {
				return nil, false
			}
			if _, err := dec.ReadToken(); err != nil {
				return nil, false
			}
			if kind == '{' {
				marks = append(marks, len(keys))
			}
			continue
		case '}', ']':
			if _, err := dec.ReadToken(); err != nil {
				return nil, false
			}
			if kind == '}' {
				keys, marks = keys[:marks[len(marks)-1]], marks[:len(marks)-1]
			}
			if dec.StackDepth() == 0 {
				return edits, dec.InputOffset() == int64(len(doc))
			}
			continue
		}
		v, err := dec.ReadValue()
		if err != nil {
			return nil, false
		}
		end := int(dec.InputOffset())
		start := end - len(v)
		switch {
		case kind == '"' && isName(dec):
			key := v[1 : len(v)-1]
			mark := marks[len(marks)-1]
			if !nameLayout(doc, start, end) || !yamlString(key, true) || len(keys)-mark >= fastMaxKeys {
				return nil, false
			}
			for _, k := range keys[mark:] {
				if bytes.EqualFold(k, key) {
					return nil, false
				}
			}
			keys = append(keys, key)
		case kind == '"':
			if !yamlString(v[1:len(v)-1], false) {
				return nil, false
			}
		case kind == '0':
			text, ok := yamlNumber(v)
			if !ok {
				return nil, false
			}
			if text != "" {
				edits = append(edits, numEdit{at: start, n: len(v), text: text})
			}
		}
	}
}

// isName reports whether the string just read is an object's name: names
// sit at odd lengths of an object (the name itself counted).
func isName(dec *jsontext.Decoder) bool {
	in, n := dec.StackIndex(dec.StackDepth())
	return in == '{' && n%2 == 1
}

// nameLayout reports whether the name doc[start:end] is followed on its
// own line by its ':', within fastMaxKeySpan bytes of its opening quote.
func nameLayout(doc []byte, start, end int) bool {
	for i := end; i < len(doc) && i-start < fastMaxKeySpan; i++ {
		switch doc[i] {
		case ' ', '\t':
		case ':':
			return true
		default:
			return false
		}
	}
	return false
}

// yamlString reports whether the raw body of a JSON string (jsontext has
// checked its grammar and UTF-8) reads the same in a YAML double-quoted
// scalar: no DEL, no escape YAML lacks (\/, a surrogate half), and every
// non-ASCII character one YAML keeps (yamlPlainRune). A key (key true) has
// no escape at all: keys are compared as written.
func yamlString(s []byte, key bool) bool {
	for i := 0; i < len(s); {
		if c := s[i]; c >= ' ' && c < 0x7f && c != '\\' {
			i++ // the common case: printable ASCII
			continue
		}
		switch c := s[i]; {
		case c == '\\' && key:
			return false
		case c == '\\':
			switch s[i+1] {
			case '/':
				return false // YAML has no \/
			case 'u':
				v, _ := strconv.ParseUint(string(s[i+2:i+6]), 16, 32)
				if v >= 0xd800 && v <= 0xdfff {
					return false // YAML refuses surrogate halves
				}
				i += 6
			default:
				i += 2
			}
		case c < utf8.RuneSelf:
			return false // DEL (jsontext refuses the other controls)
		default:
			r, n := utf8.DecodeRune(s[i:])
			if !yamlPlainRune(r, n) {
				return false
			}
			i += n
		}
	}
	return true
}

// yamlPlainRune reports whether a non-ASCII character reads the same in a
// YAML quoted scalar: valid UTF-8 YAML accepts, and not one of the line
// breaks YAML 1.1 folds (NEL, LS, PS) nor a byte order mark.
func yamlPlainRune(r rune, n int) bool {
	if r == utf8.RuneError && n == 1 {
		return false
	}
	switch r {
	case 0x85, 0x2028, 0x2029, 0xfeff:
		return false
	}
	return r >= 0xa0 && r <= 0xd7ff || r >= 0xe000 && r <= 0xfffd || r >= 0x10000 && r <= 0x10ffff
}

// yamlNumber returns the text the YAML path gives a JSON number literal
// (jsontext has checked its grammar) when it differs ("" when the same);
// ok is false for a float out of range (YAML keeps those as strings).
func yamlNumber(lit []byte) (text string, ok bool) {
	if len(lit) <= 18 && bytes.IndexAny(lit, ".eE") < 0 && string(lit) != "-0" {
		return "", true // an int64 YAML writes back as it is
	}
	text, ok = yamlNumberText(string(lit))
	if !ok || text == string(lit) {
		return "", ok
	}
	return text, true
}

// yamlNumberText is the JSON text the YAML path gives a JSON number
// literal: YAML reads it as an int64, a uint64 or a float64 and JSON
// writes that back. ok is false for a float out of range (YAML keeps
// those as strings).
func yamlNumberText(lit string) (string, bool) {
	if i, err := strconv.ParseInt(lit, 10, 64); err == nil {
		return strconv.FormatInt(i, 10), true
	}
	if u, err := strconv.ParseUint(lit, 10, 64); err == nil {
		return strconv.FormatUint(u, 10), true
	}
	f, err := strconv.ParseFloat(lit, 64)
	if err != nil {
		return "", false
	}
	b, err := json.Marshal(f)
	return string(b), err == nil
}

// decodeJSONFast decodes a file on the fast path: ok only when data is
// plain JSON (plainJSON) and every entry decodes; otherwise the caller
// takes the YAML path, which reports any problem in its own words.
func decodeJSONFast(data []byte) ([]revisionFile, bool) {
	js, ok := plainJSON(data)
	if !ok {
		return nil, false
	}
	return decodeAll(js)
}

// LooksJSON reports whether the file at path starts, after spaces and line
// breaks, with '{': a candidate for the JSON fast path (it reads at most
// 4 KiB; false when the file cannot be read).
func LooksJSON(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	head := make([]byte, 4096)
	n, _ := io.ReadFull(f, head)
	i := 0
	for i < n && isBlank(head[i]) {
		i++
	}
	return i < n && head[i] == '{'
}
