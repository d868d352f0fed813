package wake

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
)

// Bounds of a Config, so that a policy keyed by user input stays small.
const (
	MaxRules        = 64
	MaxRegexLen     = 1024
	MaxHeaders      = 16
	MaxBodyBytes    = 64 << 10
	MaxWindows      = 16
	MaxNameLen      = 63
	DefaultRefresh  = 2 * time.Second
	DefaultPageCode = http.StatusServiceUnavailable
)

// FieldError is one invalid field of a Config; Field is its path
// ("rules[0].userAgent").
type FieldError struct {
	Field, Value, Allowed string
}

// Error returns "field: value V not allowed: want A".
func (e *FieldError) Error() string {
	return fmt.Sprintf("%s: value %q not allowed: want %s", e.Field, e.Value, e.Allowed)
}

// IsZero reports whether c sets nothing.
func (c *Config) IsZero() bool {
	return c == nil || (len(c.Rules) == 0 && c.WaitingPage == nil && !c.ColdStartHeader && len(c.Schedule) == 0)
}

// Compile validates c and returns its Policy, or nil and every problem
// found as *FieldError values (nil, nil for an empty Config: no policy).
func Compile(c *Config) (*Policy, []error) {
	if c.IsZero() {
		return nil, nil
	}
	var errs []error
	bad := func(field, value, allowed string) {
		errs = append(errs, &FieldError{Field: field, Value: value, Allowed: allowed})
	}
	p := &Policy{ColdStartHeader: c.ColdStartHeader}
	if len(c.Rules) > MaxRules {
		bad("rules", strconv.Itoa(len(c.Rules)), fmt.Sprintf("at most %d rules", MaxRules))
	}
	names := map[string]bool{}
	for i, rc := range c.Rules[:min(len(c.Rules), MaxRules)] {
		f := fmt.Sprintf("rules[%d]", i)
		if !isLabel(rc.Name) {
			bad(f+".name", rc.Name, "a DNS label (lower case letters, digits and '-', at most 63)")
		} else if names[rc.Name] {
			bad(f+".name", rc.Name, "a name no other rule of the revision uses")
		}
		names[rc.Name] = true
		r := Rule{Name: rc.Name}
		r.path = compileRegex(f+".path", rc.Path, bad)
		r.method = compileRegex(f+".method", rc.Method, bad)
		r.userAgent = compileRegex(f+".userAgent", rc.UserAgent, bad)
		if len(rc.Headers) > MaxHeaders {
			bad(f+".headers", strconv.Itoa(len(rc.Headers)), fmt.Sprintf("at most %d headers", MaxHeaders))
		}
		for _, name := range sortedKeys(rc.Headers) {
			if !validHeaderName(name) || name != strings.ToLower(name) {
				bad(f+".headers", name, "a lower-case HTTP header name")
				continue
			}
			if !MatchableHeader(name) {
				bad(f+".headers", name, "a header starting with x- (not x-envoy-* or x-request-id), or accept, content-type, upgrade; use userAgent for user-agent")
				continue
			}
			r.headers = append(r.headers, headerMatch{name: name, value: compileRegex(f+".headers."+name, rc.Headers[name], bad)})
		}
		if rc.Path == "" && rc.Method == "" && rc.UserAgent == "" && len(rc.Headers) == 0 {
			bad(f, rc.Name, "at least one of path, method, userAgent, headers")
		}
		if rc.Response != nil {
			r.Response = compileResponse(f+".response", rc.Response, bad)
		}
		p.Rules = append(p.Rules, r)
	}
	if c.WaitingPage != nil {
		p.Page = compilePage(c.WaitingPage, bad)
	}
	if len(c.Schedule) > MaxWindows {
		bad("schedule", strconv.Itoa(len(c.Schedule)), fmt.Sprintf("at most %d windows", MaxWindows))
	}
	wnames := map[string]bool{}
	for i, wc := range c.Schedule[:min(len(c.Schedule), MaxWindows)] {
		f := fmt.Sprintf("schedule[%d]", i)
		if !isLabel(wc.Name) {
			bad(f+".name", wc.Name, "a DNS label (lower case letters, digits and '-', at most 63)")
		} else if wnames[wc.Name] {
			bad(f+".name", wc.Name, "a name no other window of the revision uses")
		}
		wnames[wc.Name] = true
		if w, ok := compileWindow(f, wc, bad); ok {
			p.Windows = append(p.Windows, w)
		}
	}
	if len(errs) > 0 {
		return nil, errs
	}
	if len(c.Rules) > 0 || c.WaitingPage != nil || c.ColdStartHeader {
		b, err := json.Marshal(&Config{Rules: c.Rules, WaitingPage: c.WaitingPage, ColdStartHeader: c.ColdStartHeader})
		if err != nil {
			return nil, []error{fmt.Errorf("wake: encoding the policy for holders: %w", err)}
		}
		p.holder = b
	}
	return p, nil
}

// MatchableHeader reports whether a rule may match header name: holders
// see only these (Envoy forwards only them to the ext_proc activator, see
// translate.ActivatorListener).
func MatchableHeader(name string) bool {
	switch {
	case name == "accept" || name == "content-type" || name == "upgrade":
		return true
	case strings.HasPrefix(name, "x-envoy-") || name == "x-request-id":
		return false
	default:
		return strings.HasPrefix(name, "x-")
	}
}

func compileRegex(field, expr string, bad func(string, string, string)) *regexp.Regexp {
	if expr == "" {
		return nil
	}
	if len(expr) > MaxRegexLen {
		bad(field, expr[:32]+"...", fmt.Sprintf("a regular expression of at most %d bytes", MaxRegexLen))
		return nil
	}
	if _, err := regexp.Compile(expr); err != nil {
		bad(field, expr, "an RE2 regular expression ("+err.Error()+")")
		return nil
	}
	// Anchored: the expression must match the whole value.
	return regexp.MustCompile("^(?:" + expr + ")$")
}

func compileResponse(field string, rc *ResponseConfig, bad func(string, string, string)) *Response {
	r := &Response{Status: int(rc.Status), Body: rc.Body}
	if rc.Status < 200 || rc.Status > 599 {
		bad(field+".status", strconv.Itoa(int(rc.Status)), "an HTTP status code 200..599")
	}
	if len(rc.Body) > MaxBodyBytes {
		bad(field+".body", strconv.Itoa(len(rc.Body))+" bytes", fmt.Sprintf("at most %d bytes", MaxBodyBytes))
	}
	if len(rc.Headers) > MaxHeaders {
		bad(field+".headers", strconv.Itoa(len(rc.Headers)), fmt.Sprintf("at most %d headers", MaxHeaders))
	}
	for _, name := range sortedKeys(rc.Headers) {
		v := rc.Headers[name]
		lname := strings.ToLower(name)
		switch {
		case !validHeaderName(name) || strings.HasPrefix(name, ":"):
			bad(field+".headers", name, "an HTTP header name")
		case lname == "content-length" || lname == "transfer-encoding" || lname == "connection":
			bad(field+".headers", name, "a header Envoy does not compute itself")
		case strings.ContainsAny(v, "\r\n\x00"):
			bad(field+".headers."+name, v, "a value without CR, LF or NUL")
		default:
			r.Headers = append(r.Headers, Header{Name: lname, Value: v})
		}
	}
	return r
}

func compilePage(pc *PageConfig, bad func(string, string, string)) *Page {
	pg := &Page{Status: int(pc.Status), Refresh: DefaultRefresh}
	if pg.Status == 0 {
		pg.Status = DefaultPageCode
	}
	if pg.Status < 200 || pg.Status > 599 {
		bad("waitingPage.status", strconv.Itoa(int(pc.Status)), "an HTTP status code 200..599")
	}
	if pc.Refresh != "" {
		d, err := time.ParseDuration(pc.Refresh)
		if err != nil || d < time.Second || d > time.Minute {
			bad("waitingPage.refresh", pc.Refresh, "a duration 1s..60s")
		} else {
			pg.Refresh = d
		}
	}
	if len(pc.Body) > MaxBodyBytes {
		bad("waitingPage.body", strconv.Itoa(len(pc.Body))+" bytes", fmt.Sprintf("at most %d bytes", MaxBodyBytes))
	}
	pg.Body = renderPage(pc.Body, pg.Refresh)
	return pg
}

// cronParser reads standard five-field expressions and descriptors
// (@daily, @every is refused below: a window has its own duration).
var cronParser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

func compileWindow(f string, wc WindowConfig, bad func(string, string, string)) (Window, bool) {
	ok := true
	w := Window{Name: wc.Name, MinScale: wc.MinScale, Start: wc.Start}
	if strings.HasPrefix(wc.Start, "@every") || strings.Contains(wc.Start, "TZ=") {
		bad(f+".start", wc.Start, "a five-field cron expression or @yearly/@monthly/@weekly/@daily/@hourly (time zone in timeZone)")
		ok = false
	} else if s, err := cronParser.Parse(wc.Start); err != nil {
		bad(f+".start", wc.Start, "a five-field cron expression ("+err.Error()+")")
		ok = false
	} else {
		w.sched = s
	}
	d, err := time.ParseDuration(wc.Duration)
	if err != nil || d < time.Minute || d > 7*24*time.Hour {
		bad(f+".duration", wc.Duration, "a duration 1m..168h")
		ok = false
	}
	w.Duration = d
	w.loc = time.UTC
	if wc.TimeZone != "" {
		loc, err := time.LoadLocation(wc.TimeZone)
		if err != nil || wc.TimeZone == "Local" {
			bad(f+".timeZone", wc.TimeZone, "an IANA time zone name such as Europe/Paris")
			ok = false
		} else {
			w.loc = loc
		}
	}
	w.TimeZone = w.loc.String()
	if wc.MinScale < 1 {
		bad(f+".minScale", strconv.Itoa(int(wc.MinScale)), "at least 1")
		ok = false
	}
	return w, ok
}
