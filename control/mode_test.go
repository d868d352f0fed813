package control

import (
	"testing"

	"github.com/thaw-dev/thaw/revision"
)

func TestChooseMode(t *testing.T) {
	spec := revision.DefaultSpec()
	alwaysProxy := revision.DefaultSpec()
	alwaysProxy.TargetBurstCapacity = -1
	limited := revision.DefaultSpec()
	limited.ContainerConcurrency = 4
	unlimited := revision.DefaultSpec()
	unlimited.ContainerConcurrency = 0
	unlimitedAlwaysProxy := unlimited
	unlimitedAlwaysProxy.TargetBurstCapacity = -1
	tests := []struct {
		name  string
		spec  *revision.Spec
		ready int
		rec   *Recommendation
		want  revision.Mode
	}{
		{"no backends", &spec, 0, &Recommendation{Valid: true, ExcessBurstCapacity: 10}, revision.ModeProxy},
		{"restart with ready backends", &spec, 2, nil, revision.ModeServe},
		{"restart without backends", &spec, 0, nil, revision.ModeProxy},
		{"no-data decision with EBC >= 0 serves", &spec, 2, &Recommendation{}, revision.ModeServe},
		{"no-data decision with negative EBC proxies (cc > 0)", &limited, 2, &Recommendation{ExcessBurstCapacity: -1}, revision.ModeProxy},
		{"no-data decision with negative EBC serves (cc 0)", &unlimited, 2, &Recommendation{ExcessBurstCapacity: -1}, revision.ModeServe},
		{"zero pods recommended without WantZero keeps serving", &spec, 2, &Recommendation{Valid: true, ExcessBurstCapacity: 3}, revision.ModeServe},
		{"wants zero", &spec, 2, &Recommendation{Valid: true, WantZero: true, ExcessBurstCapacity: 10}, revision.ModeProxy},
		{"negative EBC (cc > 0)", &limited, 2, &Recommendation{Valid: true, ExcessBurstCapacity: -1}, revision.ModeProxy},
		{"negative EBC, one backend (cc > 0)", &limited, 1, &Recommendation{Valid: true, ExcessBurstCapacity: -200}, revision.ModeProxy},
		{"negative EBC serves (cc 0)", &unlimited, 1, &Recommendation{Valid: true, ExcessBurstCapacity: -200}, revision.ModeServe},
		{"cc 0 without backends proxies", &unlimited, 0, &Recommendation{Valid: true, ExcessBurstCapacity: -200}, revision.ModeProxy},
		{"cc 0 wanting zero proxies", &unlimited, 1, &Recommendation{Valid: true, WantZero: true, ExcessBurstCapacity: -200}, revision.ModeProxy},
		{"cc 0 with TBC -1 proxies", &unlimitedAlwaysProxy, 3, &Recommendation{Valid: true, ExcessBurstCapacity: 100}, revision.ModeProxy},
		{"zero EBC serves", &spec, 2, &Recommendation{Valid: true, ExcessBurstCapacity: 0}, revision.ModeServe},
		{"TBC -1", &alwaysProxy, 5, &Recommendation{Valid: true, ExcessBurstCapacity: 100}, revision.ModeProxy},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ChooseMode(tt.spec, tt.ready, tt.rec); got != tt.want {
				t.Errorf("ChooseMode = %v, want %v", got, tt.want)
			}
		})
	}
}
