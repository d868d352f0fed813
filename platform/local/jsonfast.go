package local

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"strconv"
	"unicode/utf8"
)

// The JSON fast path. A file whose first non-blank byte is '{' may be
// JSON, which YAML reads too; the YAML path (yamlToJSON: parse, convert,
// marshal) was 13% of thaw's start CPU at 100,000 revisions. plainJSON
// scans such a file once and answers whether the YAML path would read it
// to the very same values; only then is it decoded directly. Anything it
// is not sure of (and every file that is not JSON, or that has a problem)
// goes down the YAML path, so every refusal, and its message, is the YAML
// path's own. FuzzJSONFastPath checks that both paths agree.

// Bounds of the fast path: past them the YAML path decides.
const (
	// fastMaxDepth bounds nesting (the file's own layout needs 6).
	fastMaxDepth = 64
	// fastMaxKeys bounds one object's keys: duplicates are looked for
	// pairwise.
	fastMaxKeys = 64
	// fastMaxKeySpan bounds the bytes from a key's opening quote to its
	// ':' (YAML allows 1,024 characters for an implicit key).
	fastMaxKeySpan = 1000
)

// jsonScan is one pass over a candidate file.
type jsonScan struct {
	data  []byte
	pos   int
	depth int
	// keys holds the keys of the objects being scanned, innermost last.
	keys [][]byte
	// edits are number literals that YAML reads to another text (1.0 is
	// 1 there, 1e2 is 100), in file order.
	edits []numEdit
}

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
	s := &jsonScan{data: data}
	s.blank()
	if s.pos >= len(data) || data[s.pos] != '{' || !s.object() {
		return nil, false
	}
	s.blank()
	if s.pos != len(data) {
		return nil, false
	}
	if len(s.edits) == 0 {
		return data, true
	}
	out := make([]byte, 0, len(data))
	last := 0
	for _, e := range s.edits {
		out = append(append(out, data[last:e.at]...), e.text...)
		last = e.at + e.n
	}
	return append(out, data[last:]...), true
}

// blank skips what may surround the document: spaces and line breaks (a
// tab there is an error to YAML, in block context).
func (s *jsonScan) blank() {
	for s.pos < len(s.data) {
		switch s.data[s.pos] {
		case ' ', '\n', '\r':
			s.pos++
		default:
			return
		}
	}
}

// ws skips JSON whitespace inside the document and reports whether a line
// break was among it.
func (s *jsonScan) ws() (nl bool) {
	for s.pos < len(s.data) {
		switch s.data[s.pos] {
		case ' ', '\t':
		case '\n', '\r':
			nl = true
		default:
			return nl
		}
		s.pos++
	}
	return nl
}

func (s *jsonScan) value() bool {
	if s.pos >= len(s.data) {
		return false
	}
	switch c := s.data[s.pos]; {
	case c == '{':
		return s.object()
	case c == '[':
		return s.array()
	case c == '"':
		s.pos++
		return s.str(false)
	case c == 't':
		return s.lit("true")
	case c == 'f':
		return s.lit("false")
	case c == 'n':
		return s.lit("null")
	case c == '-' || c >= '0' && c <= '9':
		return s.number()
	}
	return false
}

func (s *jsonScan) object() bool {
	s.pos++ // '{'
	if s.depth++; s.depth > fastMaxDepth {
		return false
	}
	mark := len(s.keys)
	defer func() { s.keys = s.keys[:mark]; s.depth-- }()
	s.ws()
	if s.pos < len(s.data) && s.data[s.pos] == '}' {
		s.pos++
		return true
	}
	for {
		if s.pos >= len(s.data) || s.data[s.pos] != '"' {
			return false
		}
		start := s.pos
		s.pos++
		if !s.str(true) {
			return false
		}
		key := s.data[start+1 : s.pos-1]
		if s.ws() || s.pos >= len(s.data) || s.data[s.pos] != ':' || s.pos-start >= fastMaxKeySpan {
			return false
		}
		if len(s.keys)-mark >= fastMaxKeys {
			return false
		}
		for _, k := range s.keys[mark:] {
			if bytes.EqualFold(k, key) {
				return false
			}
		}
		s.keys = append(s.keys, key)
		s.pos++ // ':'
		s.ws()
		if !s.value() {
			return false
		}
		s.ws()
		if s.pos >= len(s.data) {
			return false
		}
		switch s.data[s.pos] {
		case ',':
			s.pos++
			s.ws()
		case '}':
			s.pos++
			return true
		default:
			return false
		}
	}
}

func (s *jsonScan) array() bool {
	s.pos++ // '['
	if s.depth++; s.depth > fastMaxDepth {
		return false
	}
	defer func() { s.depth-- }()
	s.ws()
	if s.pos < len(s.data) && s.data[s.pos] == ']' {
		s.pos++
		return true
	}
	for {
		if !s.value() {
			return false
		}
		s.ws()
		if s.pos >= len(s.data) {
			return false
		}
		switch s.data[s.pos] {
		case ',':
			s.pos++
			s.ws()
		case ']':
			s.pos++
			return true
		default:
			return false
		}
	}
}

// str scans a string after its opening quote, up to and past its closing
// one. A key (key true) has no escape at all: keys are compared as
// written.
func (s *jsonScan) str(key bool) bool {
	for s.pos < len(s.data) {
		c := s.data[s.pos]
		switch {
		case c == '"':
			s.pos++
			return true
		case c == '\\':
			if key || !s.escape() {
				return false
			}
		case c < 0x20 || c == 0x7f:
			return false
		case c < utf8.RuneSelf:
			s.pos++
		default:
			r, n := utf8.DecodeRune(s.data[s.pos:])
			if !yamlPlainRune(r, n) {
				return false
			}
			s.pos += n
		}
	}
	return false
}

// escape scans one escape sequence that JSON and YAML both read alike.
func (s *jsonScan) escape() bool {
	if s.pos+1 >= len(s.data) {
		return false
	}
	switch s.data[s.pos+1] {
	case '"', '\\', 'b', 'f', 'n', 'r', 't':
		s.pos += 2
		return true
	case 'u':
		if s.pos+6 > len(s.data) {
			return false
		}
		v, err := strconv.ParseUint(string(s.data[s.pos+2:s.pos+6]), 16, 32)
		if err != nil || v >= 0xd800 && v <= 0xdfff {
			return false // YAML refuses surrogate halves
		}
		s.pos += 6
		return true
	}
	return false // '/' among them: YAML has no \/
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

func (s *jsonScan) lit(word string) bool {
	if !bytes.HasPrefix(s.data[s.pos:], []byte(word)) {
		return false
	}
	s.pos += len(word)
	return true
}

// number scans a JSON number and records an edit when YAML would read it
// to another text.
func (s *jsonScan) number() bool {
	start := s.pos
	if s.data[s.pos] == '-' {
		s.pos++
	}
	switch {
	case s.pos < len(s.data) && s.data[s.pos] == '0':
		s.pos++
	case s.digits() == 0:
		return false
	}
	simple := true
	if s.pos < len(s.data) && s.data[s.pos] == '.' {
		s.pos++
		if s.digits() == 0 {
			return false
		}
		simple = false
	}
	if s.pos < len(s.data) && (s.data[s.pos] == 'e' || s.data[s.pos] == 'E') {
		s.pos++
		if s.pos < len(s.data) && (s.data[s.pos] == '+' || s.data[s.pos] == '-') {
			s.pos++
		}
		if s.digits() == 0 {
			return false
		}
		simple = false
	}
	lit := s.data[start:s.pos]
	if simple && len(lit) <= 18 && string(lit) != "-0" {
		return true // an int64 YAML writes back as it is
	}
	text, ok := yamlNumberText(string(lit))
	if !ok {
		return false
	}
	if text != string(lit) {
		s.edits = append(s.edits, numEdit{at: start, n: len(lit), text: text})
	}
	return true
}

func (s *jsonScan) digits() int {
	n := 0
	for s.pos < len(s.data) && s.data[s.pos] >= '0' && s.data[s.pos] <= '9' {
		s.pos++
		n++
	}
	return n
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
	s := &jsonScan{data: head[:n]}
	s.blank()
	return s.pos < n && head[s.pos] == '{'
}
