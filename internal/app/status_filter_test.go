package app

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/thaw-dev/thaw/revision"
)

// fakeStatus is a StatusSource over fixed rows.
type fakeStatus []RevisionStatus

func (f fakeStatus) Status() []RevisionStatus { return f }

func (f fakeStatus) StatusOf(key revision.Key) (RevisionStatus, bool) {
	for _, r := range f {
		if r.Revision == key.String() {
			return r, true
		}
	}
	return RevisionStatus{}, false
}

// TestStatusHandlerFilter: /status without a query lists every row;
// ?revision= answers a list of that one row (valid or invalid), 404 for an
// unknown revision and 400 for a malformed, repeated or oversized
// parameter, naming the problem.
func TestStatusHandlerFilter(t *testing.T) {
	rows := fakeStatus{
		{Revision: "ns/a", Mode: "serve", Desired: 2, Ready: 2, RPS: 3.5},
		{Revision: "ns/b", Mode: "invalid", Desired: -1, Error: "hosts: bad"},
		{Revision: "local/web.v2", Mode: "proxy"},
	}
	long := "ns/" + strings.Repeat("x", MaxStatusRevisionLen)
	for _, tc := range []struct {
		name     string
		query    string
		wantCode int
		wantRows []RevisionStatus // for 200
		wantBody string           // substring, for errors
	}{
		{name: "all", query: "", wantCode: 200, wantRows: rows},
		{name: "other parameters ignored", query: "x=1", wantCode: 200, wantRows: rows},
		{name: "valid", query: "revision=ns/a", wantCode: 200, wantRows: rows[:1]},
		{name: "escaped slash", query: "revision=ns%2Fa", wantCode: 200, wantRows: rows[:1]},
		{name: "invalid revision", query: "revision=ns/b", wantCode: 200, wantRows: rows[1:2]},
		{name: "dotted name", query: "revision=local/web.v2", wantCode: 200, wantRows: rows[2:]},
		{name: "unknown", query: "revision=ns/zzz", wantCode: 404, wantBody: "revision ns/zzz not found"},
		{name: "empty", query: "revision=", wantCode: 400, wantBody: "want namespace/name"},
		{name: "no namespace", query: "revision=a", wantCode: 400, wantBody: "want namespace/name"},
		{name: "two slashes", query: "revision=ns/a/b", wantCode: 400, wantBody: "want namespace/name"},
		{name: "space", query: "revision=" + url.QueryEscape("ns/a b"), wantCode: 400, wantBody: "space"},
		{name: "control", query: "revision=ns/a%00", wantCode: 400, wantBody: "control"},
		{name: "bad utf-8", query: "revision=ns/a%ff", wantCode: 400, wantBody: "UTF-8"},
		{name: "too long", query: "revision=" + long, wantCode: 400, wantBody: "at most 317"},
		{name: "repeated", query: "revision=ns/a&revision=ns/b", wantCode: 400, wantBody: "given 2 times"},
		{name: "query too long", query: "x=" + strings.Repeat("y", maxStatusQueryLen), wantCode: 400, wantBody: "query:"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			statusHandler(rows).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/status?"+tc.query, nil))
			if rec.Code != tc.wantCode {
				t.Fatalf("code = %d, want %d; body %q", rec.Code, tc.wantCode, rec.Body.String())
			}
			if tc.wantCode != http.StatusOK {
				if !strings.Contains(rec.Body.String(), tc.wantBody) {
					t.Errorf("body %q does not name %q", rec.Body.String(), tc.wantBody)
				}
				return
			}
			if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type = %q", ct)
			}
			got, err := DecodeStatus(rec.Body)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.wantRows, got); diff != "" {
				t.Errorf("rows (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseStatusRevision(t *testing.T) {
	for in, want := range map[string]revision.Key{
		"ns/a":              {Namespace: "ns", Name: "a"},
		"local/Web_Bad":     {Namespace: "local", Name: "Web_Bad"}, // an invalid revision's key can be asked for
		"hello/hello.world": {Namespace: "hello", Name: "hello.world"},
	} {
		if got, err := ParseStatusRevision(in); err != nil || got != want {
			t.Errorf("ParseStatusRevision(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "/", "a/", "/a", "a", "a/b/c", "a /b", "a/\tb", "a/\u00a0b",
		"n/" + strings.Repeat("x", MaxStatusRevisionLen-1)} {
		if got, err := ParseStatusRevision(in); err == nil {
			t.Errorf("ParseStatusRevision(%q) = %v, want an error", in, got)
		}
	}
}

// FuzzStatusQuery: any query string gets 200, 400 or 404 from /status,
// never a panic; a 200 for a revision parameter is that revision's row
// alone, and a 400 or 404 body says why.
func FuzzStatusQuery(f *testing.F) {
	for _, q := range []string{"", "revision=ns/a", "revision=ns%2Fa", "revision=", "revision=a/b/c",
		"revision=ns/a&revision=ns/a", "revision=%ff%00", "revision=ns/zzz", ";revision=ns/a", "revision=ns/a;x"} {
		f.Add(q)
	}
	rows := fakeStatus{{Revision: "ns/a", Mode: "serve"}, {Revision: "ns/b", Mode: "invalid", Desired: -1}}
	h := statusHandler(rows)
	f.Fuzz(func(t *testing.T, query string) {
		req := httptest.NewRequest(http.MethodGet, "/status", nil)
		req.URL.RawQuery = query
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		switch rec.Code {
		case http.StatusOK:
			got, err := DecodeStatus(rec.Body)
			if err != nil {
				t.Fatalf("200 with an undecodable body: %v", err)
			}
			if _, filtered := req.URL.Query()[StatusRevisionParam]; filtered && len(got) != 1 {
				t.Errorf("query %q: %d rows, want 1", query, len(got))
			}
		case http.StatusBadRequest, http.StatusNotFound:
			if rec.Body.Len() == 0 {
				t.Errorf("query %q: %d with no reason", query, rec.Code)
			}
		default:
			t.Errorf("query %q: code %d", query, rec.Code)
		}
	})
}
