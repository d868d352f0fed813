package wake

import (
	"testing"
	"time"
)

func TestWindows(t *testing.T) {
	p := mustCompile(t, &Config{Schedule: []WindowConfig{
		{Name: "office", Start: "0 8 * * 1-5", Duration: "10h", TimeZone: "Europe/Paris", MinScale: 2},
		{Name: "batch", Start: "30 17 * * *", Duration: "1h", MinScale: 3}, // UTC
	}})
	paris, _ := time.LoadLocation("Europe/Paris")
	at := func(s string, loc *time.Location) time.Time {
		tm, err := time.ParseInLocation("2006-01-02 15:04", s, loc)
		if err != nil {
			t.Fatal(err)
		}
		return tm
	}
	tests := []struct {
		name   string
		now    time.Time
		window string
		min    int32
	}{
		{"monday before opening", at("2026-11-23 07:59", paris), "", 0},
		{"monday at opening", at("2026-11-23 08:00", paris), "office", 2},
		{"monday noon", at("2026-11-23 12:00", paris), "office", 2},
		{"monday last minute", at("2026-11-23 17:59", paris), "office", 2},
		{"monday closed", at("2026-11-23 18:00", paris), "", 0},
		{"saturday noon", at("2026-11-28 12:00", paris), "", 0},
		{"overlap: higher min wins", at("2026-11-23 17:45", time.UTC), "batch", 3},
		{"summer time", at("2026-07-06 08:30", paris), "office", 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, ok := p.Active(tt.now)
			if ok != (tt.window != "") || a.Name != tt.window || p.MinScaleAt(tt.now) != tt.min {
				t.Fatalf("Active(%v) = %+v, %v; want %q min %d", tt.now, a, ok, tt.window, tt.min)
			}
		})
	}
	a, _ := p.Active(at("2026-11-23 12:00", paris))
	if want := at("2026-11-23 18:00", paris); !a.Until.Equal(want) {
		t.Fatalf("Until = %v, want %v", a.Until, want)
	}
}

func TestNextChange(t *testing.T) {
	p := mustCompile(t, &Config{Schedule: []WindowConfig{{Name: "w", Start: "0 8 * * *", Duration: "2h", MinScale: 1}}})
	now := time.Date(2026, 11, 23, 7, 0, 0, 0, time.UTC)
	if got, want := p.NextChange(now), time.Date(2026, 11, 23, 8, 0, 0, 0, time.UTC); !got.Equal(want) {
		t.Fatalf("closed: NextChange = %v, want %v", got, want)
	}
	now = time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC)
	if got, want := p.NextChange(now), time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC); !got.Equal(want) {
		t.Fatalf("open: NextChange = %v, want %v", got, want)
	}
	var nilP *Policy
	if !nilP.NextChange(now).IsZero() || nilP.MinScaleAt(now) != 0 {
		t.Fatal("nil policy has windows")
	}
}
