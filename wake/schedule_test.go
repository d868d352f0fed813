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

// TestNextChangeDST: NextChange reads each window in its own time zone
// across daylight saving time changes (Europe/Paris: 2026-03-29 02:00
// CET -> 03:00 CEST, 2026-10-25 03:00 CEST -> 02:00 CET), so a decision
// loop that sleeps until it wakes at the right instant: 23 h after the
// previous 08:00 in spring, 25 h in autumn. A start in the skipped hour
// is skipped that day, by NextChange and Active alike.
func TestNextChangeDST(t *testing.T) {
	utc := func(s string) time.Time {
		tm, err := time.Parse("2006-01-02 15:04", s)
		if err != nil {
			t.Fatal(err)
		}
		return tm
	}
	tests := []struct {
		name, start string
		now         time.Time
		want        time.Time
	}{
		{"spring: next 08:00 CEST", "0 8 * * *", utc("2026-03-28 12:00"), utc("2026-03-29 06:00")},
		{"spring: closes 09:00 CEST", "0 8 * * *", utc("2026-03-29 06:30"), utc("2026-03-29 07:00")},
		{"autumn: next 08:00 CET", "0 8 * * *", utc("2026-10-24 12:00"), utc("2026-10-25 07:00")},
		{"before the change, winter time", "0 8 * * *", utc("2026-03-28 00:00"), utc("2026-03-28 07:00")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := mustCompile(t, &Config{Schedule: []WindowConfig{
				{Name: "w", Start: tt.start, Duration: "1h", TimeZone: "Europe/Paris", MinScale: 1}}})
			if got := p.NextChange(tt.now); !got.Equal(tt.want) {
				t.Fatalf("NextChange(%v) = %v, want %v", tt.now, got.UTC(), tt.want)
			}
		})
	}
	skipped := mustCompile(t, &Config{Schedule: []WindowConfig{
		{Name: "w", Start: "30 2 * * *", Duration: "1h", TimeZone: "Europe/Paris", MinScale: 1}}})
	now := utc("2026-03-28 23:00") // 00:00 CET on the day 02:30 does not exist
	// The cron library skips a start that falls in the skipped hour: that
	// day's window does not open, and Active agrees with NextChange.
	if got, want := skipped.NextChange(now), utc("2026-03-30 00:30"); !got.Equal(want) {
		t.Fatalf("NextChange(%v) for a start in the skipped hour = %v, want %v", now, got.UTC(), want)
	}
	if m := skipped.MinScaleAt(utc("2026-03-29 01:15")); m != 0 {
		t.Fatalf("MinScaleAt 03:15 CEST on the skipped day = %d, want 0 (no window that day)", m)
	}
}
