package revisionspec

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/thaw-dev/thaw/api/v1alpha1"
	"github.com/thaw-dev/thaw/revision"
)

// TestSettingFieldsCoverAutoscaling checks that every field of
// v1alpha1.Autoscaling is translated, under its JSON name, to a known
// setting key, each key once.
func TestSettingFieldsCoverAutoscaling(t *testing.T) {
	typ := reflect.TypeFor[v1alpha1.Autoscaling]()
	var jsonNames []string
	for i := range typ.NumField() {
		name, _, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ",")
		jsonNames = append(jsonNames, name)
	}
	var mapped, keys []string
	for _, f := range settingFields {
		mapped = append(mapped, f.json)
		keys = append(keys, f.key)
		if !revision.IsSetting(f.key) {
			t.Errorf("%s maps to %q, not a known setting", f.json, f.key)
		}
	}
	slices.Sort(jsonNames)
	slices.Sort(mapped)
	if d := cmp.Diff(jsonNames, mapped); d != "" {
		t.Errorf("settingFields vs Autoscaling fields (-fields +mapped):\n%s", d)
	}
	slices.Sort(keys)
	if len(slices.Compact(keys)) != len(settingFields) {
		t.Errorf("a setting key is mapped twice: %v", keys)
	}
}
