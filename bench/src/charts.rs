//! SVG charts of the numbers `just bench` measures, written next to BENCHMARKS.md
//! (bench/charts/) and linked from it. Drawn with plotters' SVG backend; text is left to the
//! viewer's sans-serif font, so no font files are needed.

use plotters::prelude::*;
use std::error::Error;
use std::path::Path;

/// How a chart draws its series.
pub enum Kind {
    /// One line per series over the categories (for a measure against a size).
    Lines,
    /// One bar per series in each category (for variants side by side).
    Bars,
}

/// One chart: named categories along x, one value per category in each series.
pub struct Chart {
    /// File name under bench/charts/ (`*.svg`).
    pub file: &'static str,
    pub title: String,
    pub kind: Kind,
    pub x: String,
    pub y: String,
    pub categories: Vec<String>,
    pub series: Vec<(String, Vec<f64>)>,
}

/// Series colours, in order.
const COLOURS: [RGBColor; 4] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(148, 103, 189),
];

impl Chart {
    /// Writes the chart to `dir/<file>`.
    pub fn write(&self, dir: &Path) -> Result<(), Box<dyn Error>> {
        let path = dir.join(self.file);
        let root = SVGBackend::new(&path, (760, 420)).into_drawing_area();
        root.fill(&WHITE)?;
        let n = self.categories.len();
        let top = self
            .series
            .iter()
            .flat_map(|(_, v)| v.iter().copied())
            .fold(0.0f64, f64::max);
        let mut chart = ChartBuilder::on(&root)
            .caption(&self.title, ("sans-serif", 20))
            .margin(12)
            .x_label_area_size(48)
            .y_label_area_size(64)
            .build_cartesian_2d(-0.5f64..(n as f64 - 0.5), 0f64..(top * 1.15).max(1e-9))?;
        let category = |x: &f64| {
            let i = x.round();
            match self.categories.get(i as usize) {
                Some(name) if (x - i).abs() < 1e-6 && i >= 0.0 => name.clone(),
                _ => String::new(),
            }
        };
        chart
            .configure_mesh()
            .disable_x_mesh()
            .light_line_style(WHITE)
            .x_labels(n.max(2))
            .x_label_formatter(&category)
            .x_desc(self.x.as_str())
            .y_desc(self.y.as_str())
            .draw()?;
        let width = 0.8 / self.series.len().max(1) as f64;
        for (s, (name, values)) in self.series.iter().enumerate() {
            let colour = COLOURS[s % COLOURS.len()];
            let points: Vec<(f64, f64)> = values
                .iter()
                .enumerate()
                .map(|(i, v)| (i as f64, *v))
                .collect();
            let drawn = match self.kind {
                Kind::Lines => {
                    let marks = points
                        .iter()
                        .map(move |p| Circle::new(*p, 4, colour.filled()));
                    chart.draw_series(marks)?;
                    chart.draw_series(LineSeries::new(points, colour.stroke_width(2)))?
                }
                Kind::Bars => chart.draw_series(points.iter().map(|&(x, v)| {
                    let left = x - 0.4 + s as f64 * width;
                    Rectangle::new([(left, 0.0), (left + width * 0.95, v)], colour.filled())
                }))?,
            };
            drawn.label(name.as_str()).legend(move |(x, y)| {
                Rectangle::new([(x, y - 5), (x + 16, y + 5)], colour.filled())
            });
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperLeft)
            .border_style(BLACK)
            .background_style(WHITE.mix(0.85))
            .draw()?;
        root.present()?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Both kinds render every category and series name into a well-formed SVG.
    #[test]
    fn charts_name_their_categories_and_series() {
        let dir = std::env::temp_dir().join(format!("supabash-charts-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        for (file, kind) in [("l.svg", Kind::Lines), ("b.svg", Kind::Bars)] {
            let chart = Chart {
                file,
                title: "commit <latency>".into(),
                kind,
                x: "files".into(),
                y: "ms".into(),
                categories: vec!["100".into(), "1,000".into(), "10,000".into()],
                series: vec![
                    ("median".into(), vec![1.0, 1.1, 1.2]),
                    ("p90".into(), vec![2.0, 2.5, 3.0]),
                ],
            };
            chart.write(&dir).unwrap();
            let svg = std::fs::read_to_string(dir.join(file)).unwrap();
            assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
            for text in ["1,000", "10,000", "median", "p90", "commit &lt;latency&gt;"] {
                assert!(svg.contains(text), "{file} lacks {text}");
            }
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
