package revisionspec

import (
	"errors"
	"strings"
	"testing"

	"github.com/thaw-dev/thaw/api/v1alpha1"
	"github.com/thaw-dev/thaw/revision"
)

func TestValidateSplit(t *testing.T) {
	split := func(proto v1alpha1.Protocol, traffic ...v1alpha1.TrafficTarget) *v1alpha1.RevisionSplit {
		return &v1alpha1.RevisionSplit{Spec: v1alpha1.RevisionSplitSpec{Traffic: traffic, Protocol: proto}}
	}
	tt := func(name string, percent int32, tag string) v1alpha1.TrafficTarget {
		return v1alpha1.TrafficTarget{RevisionName: name, Percent: percent, Tag: tag}
	}
	if p, err := ValidateSplit(split("", tt("v1", 90, ""), tt("v2", 10, "canary"), tt("v0", 0, "prev"))); err != nil || p != revision.ProtocolHTTP1 {
		t.Errorf("90/10/0: %q %v, want http1", p, err)
	}
	if p, err := ValidateSplit(split("h2c", tt("v1", 100, ""))); err != nil || p != revision.ProtocolH2C {
		t.Errorf("h2c: %q %v", p, err)
	}
	for name, c := range map[string]struct {
		s    *v1alpha1.RevisionSplit
		want string
	}{
		"sum":       {split("", tt("v1", 80, ""), tt("v2", 10, "")), "traffic percents sum to 90, want 100"},
		"empty":     {split(""), "spec.traffic has 0 entries"},
		"too many":  {split("", make([]v1alpha1.TrafficTarget, 17)...), "17 entries"},
		"twice":     {split("", tt("v1", 50, ""), tt("v1", 50, "")), `Revision "v1" twice`},
		"name":      {split("", tt("V1", 100, "")), "spec.traffic[0].revisionName"},
		"negative":  {split("", tt("v1", 110, ""), tt("v2", -10, "")), "spec.traffic[0].percent 110"},
		"tag":       {split("", tt("v1", 100, "a.b")), "spec.traffic[0].tag"},
		"tag twice": {split("", tt("v1", 50, "x"), tt("v2", 50, "x")), `tag "x" twice`},
		"protocol":  {split("h3", tt("v1", 100, "")), `spec.protocol "h3"`},
	} {
		_, err := ValidateSplit(c.s)
		if !errors.Is(err, ErrSplitRule) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want ErrSplitRule naming %q", name, err, c.want)
		}
	}
}
