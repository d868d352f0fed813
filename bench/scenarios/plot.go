package main

import (
	"fmt"
	"image/color"
	"math"
	"os"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"

	"github.com/thaw-dev/thaw/bench/results"
)

var (
	colHeld     = color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff}
	colInFlight = color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff}
	colServed   = color.RGBA{R: 0x7f, G: 0x7f, B: 0x7f, A: 0xff}
	colDesired  = color.RGBA{R: 0xff, G: 0x7f, B: 0x0e, A: 0xff}
	colReady    = color.RGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff}
)

// plotBurst draws the burst timeline as a PNG at path: requests (held by
// the activator, in flight through it, served so far) on top, backends
// (desired, ready) below, over seconds since the burst started.
func plotBurst(b *results.Burst, path string) error {
	series := func(f func(results.BurstSample) int) plotter.XYs {
		xys := make(plotter.XYs, len(b.Samples))
		for i, s := range b.Samples {
			xys[i].X, xys[i].Y = s.TMs/1000, float64(f(s))
		}
		return xys
	}
	top := plot.New()
	top.Title.Text = fmt.Sprintf("thaw local: %d requests at once to a revision at zero: %d errors, all served in %.2f s\n%s",
		b.Requests, b.Errors, b.AllServedMs/1000, b.Short)
	top.Y.Label.Text = "requests"
	top.Y.Min = 0
	bottom := plot.New()
	bottom.X.Label.Text = "seconds since the burst started (thaw /status sampled every 50 ms)"
	bottom.Y.Label.Text = "backends"
	bottom.Y.Min = 0
	add := func(p *plot.Plot, name string, xys plotter.XYs, c color.Color, dashed bool) error {
		l, err := plotter.NewLine(xys)
		if err != nil {
			return fmt.Errorf("plot %s: %w", name, err)
		}
		l.StepStyle = plotter.PostStep
		l.Color = c
		l.Width = vg.Points(2)
		if dashed {
			l.Dashes = []vg.Length{vg.Points(6), vg.Points(3)}
		}
		p.Add(l)
		p.Legend.Add(name, l)
		return nil
	}
	for _, s := range []struct {
		p      *plot.Plot
		name   string
		f      func(results.BurstSample) int
		c      color.Color
		dashed bool
	}{
		{top, "held (waiting in the activator)", func(s results.BurstSample) int { return s.Held }, colHeld, false},
		{top, "in flight (released by the activator, not finished)", func(s results.BurstSample) int { return s.InFlight }, colInFlight, false},
		{top, "served (responses received)", func(s results.BurstSample) int { return s.Served }, colServed, true},
		{bottom, "desired (autoscaler)", func(s results.BurstSample) int { return max(s.Desired, 0) }, colDesired, true},
		{bottom, "ready (backends in the registry)", func(s results.BurstSample) int { return s.Ready }, colReady, false},
	} {
		if err := add(s.p, s.name, series(s.f), s.c, s.dashed); err != nil {
			return err
		}
	}
	for _, p := range []*plot.Plot{top, bottom} {
		p.Add(plotter.NewGrid())
		p.Legend.Top = true
		p.Legend.Left = false
		p.Legend.TextStyle.Font.Size = vg.Points(9)
		p.Title.TextStyle.Font.Size = vg.Points(11)
	}
	top.Y.Max = float64(b.Requests) * 1.3
	bottom.Y.Max = float64(max(b.DesiredMax, 1)) * 1.25
	// Same x range on both panels.
	xmin, xmax := top.X.Min, top.X.Max
	xmin, xmax = min(xmin, bottom.X.Min), max(xmax, bottom.X.Max)
	top.X.Min, bottom.X.Min, top.X.Max, bottom.X.Max = xmin, xmin, xmax, xmax
	top.X.Tick.Marker, bottom.X.Tick.Marker = secondsTicker{}, secondsTicker{}

	img := vgimg.NewWith(vgimg.UseWH(9*vg.Inch, 6*vg.Inch), vgimg.UseDPI(110), vgimg.UseBackgroundColor(color.White))
	dc := draw.New(img)
	tiles := draw.Tiles{Rows: 2, Cols: 1, PadX: vg.Millimeter, PadY: 4 * vg.Millimeter,
		PadTop: 2 * vg.Millimeter, PadBottom: 2 * vg.Millimeter, PadLeft: 2 * vg.Millimeter, PadRight: 4 * vg.Millimeter}
	canvases := plot.Align([][]*plot.Plot{{top}, {bottom}}, tiles, dc)
	top.Draw(canvases[0][0])
	bottom.Draw(canvases[1][0])
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("burst picture: %w", err)
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(f); err != nil {
		f.Close()
		return fmt.Errorf("burst picture: %w", err)
	}
	return f.Close()
}

// secondsTicker labels every 0.5 s (every 1 s past 8 s of range), with a
// minor tick every 0.1 s.
type secondsTicker struct{}

func (secondsTicker) Ticks(lo, hi float64) []plot.Tick {
	major := 0.5
	if hi-lo > 8 {
		major = 1
	}
	var ticks []plot.Tick
	for i := int(math.Ceil(lo * 10)); float64(i)/10 <= hi && len(ticks) < 1000; i++ {
		v := float64(i) / 10
		t := plot.Tick{Value: v}
		if math.Abs(math.Remainder(v, major)) < 1e-9 {
			t.Label = strconv.FormatFloat(v, 'f', 1, 64)
		}
		ticks = append(ticks, t)
	}
	return ticks
}
