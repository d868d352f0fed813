package main

import (
	"testing"
	"time"

	"github.com/spf13/pflag"
	"go.uber.org/zap"

	"github.com/thaw-dev/thaw/xds/translate"
)

func TestOnDemandFlags(t *testing.T) {
	for _, tc := range []struct {
		args    []string
		eg      bool
		wantOn  bool
		wantErr bool
	}{
		{args: nil},
		{args: []string{"--on-demand-hosts"}, wantOn: true},
		{args: []string{"--on-demand-hosts", "--on-demand-evict-after=30s", "--on-demand-hosts-per-envoy=5",
			"--on-demand-fetch-timeout=2s"}, wantOn: true},
		{args: []string{"--on-demand-hosts"}, eg: true, wantErr: true},
		{args: nil, eg: true},
	} {
		fl := pflag.NewFlagSet("t", pflag.ContinueOnError)
		var f onDemandFlags
		f.add(fl)
		if err := fl.Parse(tc.args); err != nil {
			t.Fatal(err)
		}
		cfg := translate.DefaultConfig()
		err := f.apply(zap.NewNop(), &cfg, tc.eg)
		if (err != nil) != tc.wantErr || cfg.OnDemandHosts != tc.wantOn {
			t.Errorf("%v eg=%v: on=%v err=%v; want on=%v err=%v", tc.args, tc.eg, cfg.OnDemandHosts, err, tc.wantOn, tc.wantErr)
		}
		if err := cfg.Validate(); err != nil {
			t.Errorf("%v: %v", tc.args, err)
		}
		if len(tc.args) == 4 && (cfg.EvictAfter() != 30*time.Second || cfg.PerEnvoy() != 5 || cfg.FetchTimeout() != 2*time.Second) {
			t.Errorf("%v: evict %v per Envoy %d fetch %v", tc.args, cfg.EvictAfter(), cfg.PerEnvoy(), cfg.FetchTimeout())
		}
		if len(tc.args) == 1 && tc.wantOn && cfg.FetchTimeout() != translate.DefaultOnDemandFetchTimeout {
			t.Errorf("%v: fetch timeout %v, want the default", tc.args, cfg.FetchTimeout())
		}
	}
}
