package main

import (
	"slices"
	"testing"
)

func TestParseActivators(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    []string
		wantErr bool
	}{
		{in: "extproc", want: []string{"extproc"}},
		{in: "extproc,module", want: []string{"extproc", "module"}},
		{in: " module , extproc", want: []string{"module", "extproc"}},
		{in: "module,module", wantErr: true},
		{in: "ext_proc", wantErr: true},
		{in: "", wantErr: true},
	} {
		got, err := parseActivators(tc.in)
		if (err != nil) != tc.wantErr || !slices.Equal(got, tc.want) && !tc.wantErr {
			t.Errorf("parseActivators(%q) = %v, %v; want %v, error %v", tc.in, got, err, tc.want, tc.wantErr)
		}
	}
}
