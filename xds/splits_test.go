package xds

import (
	"errors"
	"testing"

	"github.com/thaw-dev/thaw/revision"
	"github.com/thaw-dev/thaw/xds/translate"
)

// TestSplitVerdicts: the skipped fleet splits of each translation are
// published with their reason, and the channel is closed only when the
// set (by message) changes.
func TestSplitVerdicts(t *testing.T) {
	s := NewServer(ServerOptions{Config: translate.Config{}})
	key := revision.Key{Namespace: "shop", Name: "s"}
	left := &translate.SplitLeftOutError{Split: key, Describe: "shop/v1 (100%)",
		LeftOut: []translate.LeftOutMember{{Revision: revision.Key{Namespace: "shop", Name: "v1"}, Err: errors.New("collision")}}}
	closed := func(ch <-chan struct{}) bool {
		select {
		case <-ch:
			return true
		default:
			return false
		}
	}
	steps := []struct {
		name    string
		skipped map[revision.Key]error
		changed bool
	}{
		{"none", nil, false},
		{"left out", map[revision.Key]error{key: left}, true},
		{"same again", map[revision.Key]error{key: left}, false},
		{"other reason", map[revision.Key]error{key: errors.New("invalid")}, true},
		{"routed again", map[revision.Key]error{}, true},
		{"still routed", nil, false},
	}
	for _, st := range steps {
		_, ch := s.SplitVerdicts()
		s.logSkippedSplits(st.skipped)
		if got := closed(ch); got != st.changed {
			t.Fatalf("%s: channel closed %v, want %v", st.name, got, st.changed)
		}
		m, ch2 := s.SplitVerdicts()
		if closed(ch2) {
			t.Fatalf("%s: new channel already closed", st.name)
		}
		if err, want := m[key], st.skipped[key]; (err == nil) != (want == nil) || (err != nil && err.Error() != want.Error()) {
			t.Fatalf("%s: verdict %v, want %v", st.name, err, want)
		}
	}
	var lo *translate.SplitLeftOutError
	s.logSkippedSplits(map[revision.Key]error{key: left})
	if m, _ := s.SplitVerdicts(); !errors.As(m[key], &lo) {
		t.Errorf("verdict %v is not a *SplitLeftOutError", m[key])
	}
}
