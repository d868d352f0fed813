package translate

import (
	"testing"

	extprocv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/ext_proc/v3"
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
	// The revision, and what wake policies look at (wake.MatchableHeader);
	// never Envoy's own headers.
	pats := ep.GetForwardRules().GetAllowedHeaders().GetPatterns()
	if len(pats) == 0 || pats[0].GetExact() != RevisionHeader || len(pats) != 2+len(wakeHeaders) {
		t.Errorf("forward_rules allowed_headers %v, want %s, the wake headers and x-", pats, RevisionHeader)
	}
	if dis := ep.GetForwardRules().GetDisallowedHeaders().GetPatterns(); len(dis) == 0 || dis[0].GetPrefix() != "x-envoy-" {
		t.Errorf("forward_rules disallowed_headers %v, want x-envoy- first", dis)
	}
}
