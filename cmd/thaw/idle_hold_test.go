package main

import (
	"testing"

	"github.com/spf13/pflag"
	"go.uber.org/zap"
)

func TestIdleHoldPathDefault(t *testing.T) {
	for _, tc := range []struct {
		name       string
		args       []string
		module, eg bool
		want       bool
	}{
		{name: "module default", module: true, want: true},
		{name: "module off", args: []string{"--idle-hold-path=false"}, module: true, want: false},
		{name: "module explicit", args: []string{"--idle-hold-path"}, module: true, want: true},
		{name: "ext_proc default keeps clusters", want: false},
		{name: "ext_proc explicit", args: []string{"--idle-hold-path"}, want: true},
		{name: "ext_proc explicit off", args: []string{"--idle-hold-path=false"}, want: false},
		{name: "module with Envoy Gateway default", module: true, eg: true, want: false},
		// Given with EG: passed on, internal/app turns it off and warns.
		{name: "module with Envoy Gateway explicit", args: []string{"--idle-hold-path"}, module: true, eg: true, want: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fl := pflag.NewFlagSet("test", pflag.ContinueOnError)
			var f idleHoldPathFlag
			f.add(fl)
			if err := fl.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			if got := fl.Lookup("idle-hold-path").DefValue; got != "true" {
				t.Fatalf("default %q, want true", got)
			}
			if got := f.resolve(zap.NewNop(), fl, tc.module, tc.eg); got != tc.want {
				t.Errorf("resolve(module=%v, eg=%v, %v) = %v, want %v", tc.module, tc.eg, tc.args, got, tc.want)
			}
		})
	}
}
