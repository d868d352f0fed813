package translate

import (
	"testing"

	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_proc/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"google.golang.org/protobuf/proto"

	"github.com/thaw-dev/thaw/extproc"
)

// The filter must allow exactly the override the activator sends, or Envoy
// ignores it and keeps every stream open until the request ends.
func TestExtProcFilterAllowsTheActivatorsOverride(t *testing.T) {
	f, err := ExtProcFilter(&Config{ExtProcMessageTimeout: DefaultExtProcMessageTimeout, HoldBudget: DefaultHoldBudget})
	if err != nil {
		t.Fatal(err)
	}
	var ep extprocv3.ExternalProcessor
	if err := f.GetTypedConfig().UnmarshalTo(&ep); err != nil {
		t.Fatal(err)
	}
	if !ep.GetAllowModeOverride() || len(ep.GetAllowedOverrideModes()) != 1 {
		t.Fatalf("allow_mode_override %v, allowed_override_modes %v; want true and one mode", ep.GetAllowModeOverride(), ep.GetAllowedOverrideModes())
	}
	if !proto.Equal(ep.GetAllowedOverrideModes()[0], extproc.ShortMode()) {
		t.Errorf("allowed override %v, want extproc.ShortMode() %v", ep.GetAllowedOverrideModes()[0], extproc.ShortMode())
	}
	if !proto.Equal(ActivatorShortMode(), extproc.ShortMode()) {
		t.Errorf("ActivatorShortMode() %v != extproc.ShortMode() %v", ActivatorShortMode(), extproc.ShortMode())
	}
	if got := ep.GetStatusOnError().GetCode(); got != 503 {
		t.Errorf("status_on_error %v, want 503", got)
	}
	if got := ep.GetProcessingMode().GetResponseTrailerMode(); got != extprocv3.ProcessingMode_SEND {
		t.Errorf("response_trailer_mode %v, want SEND (the completion signal)", got)
	}
	// Without a wake policy the activator needs the revision alone.
	if pats := ep.GetForwardRules().GetAllowedHeaders().GetPatterns(); len(pats) != 1 || pats[0].GetExact() != RevisionHeader {
		t.Errorf("forward_rules allowed_headers %v, want %s alone", pats, RevisionHeader)
	}
}

// thaw_activator forwards x-thaw-revision alone; thaw_activator_wake and
// thaw_hold also what wake policies look at (wake.MatchableHeader), never
// Envoy's own headers.
func TestForwardRulesByListener(t *testing.T) {
	cfg := &Config{ExtProcMessageTimeout: DefaultExtProcMessageTimeout, HoldBudget: DefaultHoldBudget}
	tests := []struct {
		build func(*Config) (*listenerv3.Listener, error)
		name  string
		wide  bool
	}{
		{ActivatorListener, ActivatorListenerName, false},
		{WakeListener, WakeListenerName, true},
		{HoldListener, HoldListenerName, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, err := tt.build(cfg)
			if err != nil {
				t.Fatal(err)
			}
			if l.GetName() != tt.name {
				t.Errorf("name %s, want %s", l.GetName(), tt.name)
			}
			rules := listenerExtProc(t, l).GetForwardRules()
			pats := rules.GetAllowedHeaders().GetPatterns()
			if len(pats) == 0 || pats[0].GetExact() != RevisionHeader {
				t.Fatalf("allowed_headers %v, want %s first", pats, RevisionHeader)
			}
			if !tt.wide {
				if len(pats) != 1 || rules.GetDisallowedHeaders() != nil {
					t.Errorf("forward_rules %v, want %s alone", rules, RevisionHeader)
				}
				return
			}
			if len(pats) != 2+len(wakeHeaders) || pats[len(pats)-1].GetPrefix() != "x-" {
				t.Errorf("allowed_headers %v, want %s, the wake headers and x-", pats, RevisionHeader)
			}
			if dis := rules.GetDisallowedHeaders().GetPatterns(); len(dis) == 0 || dis[0].GetPrefix() != "x-envoy-" {
				t.Errorf("disallowed_headers %v, want x-envoy- first", dis)
			}
		})
	}
}

// listenerExtProc returns the ext_proc filter config of an activator
// listener.
func listenerExtProc(t *testing.T, l *listenerv3.Listener) *extprocv3.ExternalProcessor {
	t.Helper()
	var hcm hcmv3.HttpConnectionManager
	if err := l.GetFilterChains()[0].GetFilters()[0].GetTypedConfig().UnmarshalTo(&hcm); err != nil {
		t.Fatal(err)
	}
	var ep extprocv3.ExternalProcessor
	if err := hcm.GetHttpFilters()[0].GetTypedConfig().UnmarshalTo(&ep); err != nil {
		t.Fatal(err)
	}
	return &ep
}
