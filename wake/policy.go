package wake

import (
	"regexp"
	"slices"
	"strings"
	"time"

	"golang.org/x/net/http/httpguts"
	"k8s.io/apimachinery/pkg/util/validation"
)

// HeaderColdStart is the response header that gives how long a request
// was held, in whole milliseconds, when a policy sets ColdStartHeader.
const HeaderColdStart = "x-thaw-cold-start"

// Policy is a compiled Config. It is immutable and safe for concurrent use.
// A nil *Policy is valid and does nothing.
type Policy struct {
	Rules []Rule
	// Page is the waiting page (nil: none).
	Page *Page
	// ColdStartHeader: answer held requests with HeaderColdStart.
	ColdStartHeader bool
	// Windows are the warm windows.
	Windows []Window
	// holder is HolderConfig's value, encoded once by Compile.
	holder []byte
}

// HolderConfig returns, as JSON, the part of the policy's Config that
// request holders apply (rules, waiting page, cold-start header; no
// schedule, which the autoscaler applies), or nil when that part is empty.
// It is encoded once by Compile and deterministic (map keys sorted), so a
// holder that receives it again can compare bytes instead of recompiling.
// The in-Envoy activator module gets it on thaw's state stream (modsvc)
// and compiles it again with Compile.
func (p *Policy) HolderConfig() []byte {
	if p == nil {
		return nil
	}
	return p.holder
}

// ReadsRequests reports whether the policy looks at requests (rules or a
// waiting page), so the activator needs their headers: Envoy forwards
// them only for such revisions (translate.WakeListener). False for nil.
func (p *Policy) ReadsRequests() bool {
	return p != nil && (len(p.Rules) > 0 || p.Page != nil)
}

// Rule is a compiled RuleConfig.
type Rule struct {
	Name string
	// Response is the static response (nil: 503 with Retry-After).
	Response                *Response
	path, method, userAgent *regexp.Regexp
	headers                 []headerMatch
}

type headerMatch struct {
	name  string
	value *regexp.Regexp
}

// Response is a static response; header names are lower case.
type Response struct {
	Status  int
	Headers []Header
	Body    string
}

// Header is one response header.
type Header struct{ Name, Value string }

// Page is the compiled waiting page.
type Page struct {
	// Status is the HTTP status of the page.
	Status int
	// Refresh is how often the page reloads itself.
	Refresh time.Duration
	// Body is the rendered HTML.
	Body string
}

// Request is what rules see of a request. Header returns the first value
// of a lower-case header name and whether it was present.
type Request struct {
	Method string
	// Path is the request path; a query string is cut off before matching.
	Path   string
	Header func(name string) (string, bool)
}

// Action is what a holder does with a request for a revision at zero.
type Action int

const (
	// Hold: hold the request and wake the revision, as without a policy.
	Hold Action = iota
	// Static: answer with the rule's response (or 503 + Retry-After) and
	// do not wake the revision.
	Static
	// WaitingPage: answer with the waiting page and wake the revision.
	WaitingPage
)

// AnswersAtZero reports whether the policy answers some requests for a
// revision at zero without holding them (rules or a waiting page). The
// autoscaler then wakes such a revision only for a held request (a poke),
// not for load Envoy counted: that includes the requests answered here.
func (p *Policy) AnswersAtZero() bool { return p != nil && (len(p.Rules) > 0 || p.Page != nil) }

// Evaluate decides for a request r to a revision at zero. Callers evaluate
// only at zero: an awake revision gets every request as usual. The first
// matching rule wins (Static, with that rule); otherwise a browser
// navigation gets WaitingPage when the policy has a page; otherwise Hold.
// A nil policy always holds.
func (p *Policy) Evaluate(r Request) (Action, *Rule) {
	if p == nil {
		return Hold, nil
	}
	for i := range p.Rules {
		if p.Rules[i].Matches(r) {
			return Static, &p.Rules[i]
		}
	}
	if p.Page != nil && IsNavigation(r) {
		return WaitingPage, nil
	}
	return Hold, nil
}

// Matches reports whether every matcher of the rule matches r.
func (rl *Rule) Matches(r Request) bool {
	if rl.method != nil && !rl.method.MatchString(r.Method) {
		return false
	}
	if rl.path != nil {
		path, _, _ := strings.Cut(r.Path, "?")
		if !rl.path.MatchString(path) {
			return false
		}
	}
	if rl.userAgent != nil && !headerMatches(r, "user-agent", rl.userAgent) {
		return false
	}
	for _, h := range rl.headers {
		if !headerMatches(r, h.name, h.value) {
			return false
		}
	}
	return true
}

func headerMatches(r Request, name string, re *regexp.Regexp) bool {
	if r.Header == nil {
		return false
	}
	v, ok := r.Header(name)
	return ok && re.MatchString(v)
}

// IsNavigation reports whether r looks like a browser loading a page: GET
// or HEAD, an Accept header that lists text/html, no Upgrade (WebSocket)
// and not gRPC. API clients, gRPC and WebSocket are held as usual.
func IsNavigation(r Request) bool {
	if (r.Method != "GET" && r.Method != "HEAD") || r.Header == nil {
		return false
	}
	if _, up := r.Header("upgrade"); up {
		return false
	}
	if ct, ok := r.Header("content-type"); ok && strings.HasPrefix(ct, "application/grpc") {
		return false
	}
	accept, ok := r.Header("accept")
	return ok && strings.Contains(strings.ToLower(accept), "text/html")
}

func isLabel(s string) bool {
	return s != "" && len(validation.IsDNS1123Label(s)) == 0
}

func validHeaderName(s string) bool { return s != "" && httpguts.ValidHeaderFieldName(s) }

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
