package eval

import (
	"fmt"
	"io"
	"path/filepath"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"

	"github.com/graphloom/graphloom/graphio"
)

// Chart size: a figure column of a paper.
const chartW, chartH = 6 * vg.Inch, 4 * vg.Inch

// RecallChart plots one curve per retriever that ran: Recall@k over the report's
// cut-offs, or — when no retriever has gold evidence to score — the rate of questions
// with a gold answer inside the top k passages. k is on a log axis. It returns nil
// when there is nothing to plot.
func RecallChart(r *Report) (*plot.Plot, error) {
	metric := func(s *Summary) map[int]float64 { return s.Recall }
	ylabel := "Recall@k (%)"
	has := false
	for i := range r.Retrievers {
		has = has || r.Retrievers[i].Recall != nil
	}
	if !has {
		metric = func(s *Summary) map[int]float64 { return s.AnswerHit }
		ylabel = "questions with a gold answer in the top k (%)"
		for i := range r.Retrievers {
			has = has || r.Retrievers[i].AnswerHit != nil
		}
	}
	if !has {
		return nil, nil
	}
	p := plot.New()
	p.Title.Text = r.Title()
	p.X.Label.Text = "k"
	p.Y.Label.Text = ylabel
	p.Y.Min, p.Y.Max = 0, 100
	var yt plot.ConstantTicks
	for y := 0; y <= 100; y += 10 {
		t := plot.Tick{Value: float64(y)}
		if y%20 == 0 {
			t.Label = fmt.Sprint(y)
		}
		yt = append(yt, t)
	}
	p.Y.Tick.Marker = yt
	ks := slices.Clone(r.Settings.Ks)
	if len(ks) > 1 {
		p.X.Scale = plot.LogScale{}
	}
	ticks := make(plot.ConstantTicks, len(ks))
	for i, k := range ks {
		ticks[i] = plot.Tick{Value: float64(k), Label: fmt.Sprint(k)}
	}
	p.X.Tick.Marker = ticks
	p.X.Min, p.X.Max = float64(ks[0]), float64(ks[len(ks)-1])
	p.Add(plotter.NewGrid())
	n := 0
	var curves []plotter.XYs
	var names []string
	for i := range r.Retrievers {
		s := &r.Retrievers[i]
		vals := metric(s)
		if s.Skipped != "" || vals == nil {
			continue
		}
		pts := make(plotter.XYs, 0, len(ks))
		for _, k := range ks {
			if v, ok := vals[k]; ok {
				pts = append(pts, plotter.XY{X: float64(k), Y: 100 * v})
			}
		}
		line, points, err := plotter.NewLinePoints(pts)
		if err != nil {
			return nil, fmt.Errorf("eval: chart: %s: %w", s.Retriever, err)
		}
		line.Color = plotutil.Color(n)
		line.Width = vg.Points(1.5)
		points.Color = plotutil.Color(n)
		points.Shape = plotutil.Shape(n)
		p.Add(line, points)
		p.Legend.Add(s.Retriever, line, points)
		curves, names = append(curves, pts), append(names, s.Retriever)
		n++
	}
	if n == 0 {
		return nil, nil
	}
	placeLegend(p, curves, names, chartW, chartH)
	return p, nil
}

// placeLegend puts the legend in the first corner of the data area — top left, top
// right, bottom right, bottom left — where it covers no point or line of the curves
// (drawn at w × h). When every corner is taken it raises the top of the y axis, above
// the last tick, until the top left is free.
func placeLegend(p *plot.Plot, curves []plotter.XYs, names []string, w, h vg.Length) {
	var width, entryH vg.Length
	for _, name := range names {
		width = max(width, p.Legend.ThumbnailWidth+p.Legend.TextStyle.Rectangle(" "+name).Max.X)
		entryH = max(entryH, p.Legend.TextStyle.Rectangle(name).Max.Y)
	}
	height := vg.Length(len(names))*entryH + vg.Length(len(names)-1)*p.Legend.Padding
	const margin = 6 // points: glyph radius and the axis padding the data area omits
	free := func(top, left bool) bool {
		dc := p.DataCanvas(draw.New(vgimg.New(w, h)))
		fx, fy := p.Transforms(&dc)
		box := vg.Rectangle{Min: vg.Point{X: dc.Min.X, Y: dc.Min.Y}}
		if !left {
			box.Min.X = dc.Max.X - width
		}
		if top {
			box.Min.Y = dc.Max.Y - height
		}
		box.Max = vg.Point{X: box.Min.X + width + margin, Y: box.Min.Y + height + margin}
		box.Min = vg.Point{X: box.Min.X - margin, Y: box.Min.Y - margin}
		in := func(x, y vg.Length) bool {
			return x >= box.Min.X && x <= box.Max.X && y >= box.Min.Y && y <= box.Max.Y
		}
		for _, c := range curves {
			for i := range c {
				x0, y0 := fx(c[i].X), fy(c[i].Y)
				if in(x0, y0) {
					return false
				}
				if i == 0 {
					continue
				}
				xp, yp := fx(c[i-1].X), fy(c[i-1].Y)
				for s := 1; s < 32; s++ { // the segment from the previous point
					f := vg.Length(s) / 32
					if in(xp+f*(x0-xp), yp+f*(y0-yp)) {
						return false
					}
				}
			}
		}
		return true
	}
	for _, corner := range [][2]bool{{true, true}, {true, false}, {false, false}, {false, true}} {
		if free(corner[0], corner[1]) {
			p.Legend.Top, p.Legend.Left = corner[0], corner[1]
			return
		}
	}
	p.Legend.Top, p.Legend.Left = true, true
	for i := 0; i < 20 && !free(true, true); i++ {
		p.Y.Max *= 1.1
	}
}

// writeCharts saves RecallChart as recall.png and recall.svg in dir.
func writeCharts(r *Report, dir string) ([]string, error) {
	p, err := RecallChart(r)
	if err != nil || p == nil {
		return nil, err
	}
	var out []string
	for _, format := range []string{"png", "svg"} {
		wt, err := p.WriterTo(chartW, chartH, format)
		if err != nil {
			return nil, fmt.Errorf("eval: chart: %w", err)
		}
		path := filepath.Join(dir, "recall."+format)
		if err := graphio.AtomicWrite(path, func(w io.Writer) error { _, err := wt.WriteTo(w); return err }); err != nil {
			return nil, err
		}
		out = append(out, path)
	}
	return out, nil
}
