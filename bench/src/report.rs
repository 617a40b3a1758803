//! Statistics and the Markdown of BENCHMARKS.md.

use crate::charts::Chart;
use std::fmt::Write as _;
use std::path::Path;
use std::time::Instant;

pub struct Stats {
    pub n: usize,
    pub median: f64,
    pub p90: f64,
}

/// Nearest-rank median and 90th percentile.
pub fn stats(xs: &[f64]) -> Stats {
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    let at = |q: f64| v[((q * v.len() as f64).ceil() as usize).clamp(1, v.len()) - 1];
    Stats {
        n: v.len(),
        median: at(0.5),
        p90: at(0.9),
    }
}

/// Milliseconds since `t`.
pub fn ms(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1000.0
}

#[derive(Default)]
pub struct Report {
    machine: String,
    summary: Vec<[String; 4]>,
    body: String,
    charts: Vec<Chart>,
}

fn sh(cmd: &str) -> String {
    let out = std::process::Command::new("sh").args(["-c", cmd]).output();
    out.map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_default()
}

impl Report {
    pub fn new() -> Report {
        Report::default()
    }

    pub fn machine(&mut self, pg_version: &str) {
        self.machine = format!(
            "- date: {}\n- CPUs (`nproc`): {}\n- CPU model: {}\n- memory: {}\n- PostgreSQL: {}\n",
            sh("date -u '+%Y-%m-%d %H:%M UTC'"),
            sh("nproc"),
            sh("grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'"),
            sh("awk '/MemTotal/ {printf \"%.1f GiB\", $2 / 1048576}' /proc/meminfo"),
            pg_version.trim(),
        );
    }

    pub fn summary(&mut self, what: &str, result: String, target: String, met: Option<bool>) {
        let met = match met {
            Some(true) => "met",
            Some(false) => "**missed**",
            None => "—",
        };
        self.summary
            .push([what.to_owned(), result, target, met.to_owned()]);
    }

    pub fn section(&mut self, title: &str) {
        let _ = write!(self.body, "\n## {title}\n\n");
    }

    pub fn line(&mut self, text: &str) {
        let _ = writeln!(self.body, "{text}");
    }

    pub fn table(&mut self, header: &[&str]) {
        let _ = writeln!(self.body, "\n| {} |", header.join(" | "));
        let _ = writeln!(self.body, "|{}", "---|".repeat(header.len()));
    }

    pub fn row(&mut self, cells: &[String]) {
        let _ = writeln!(self.body, "| {} |", cells.join(" | "));
    }

    /// Adds a chart, shown where the report is now (its SVG goes to bench/charts/).
    pub fn chart(&mut self, chart: Chart) {
        let _ = write!(
            self.body,
            "\n![{}](bench/charts/{})\n",
            chart.title, chart.file
        );
        self.charts.push(chart);
    }

    /// Writes every chart's SVG into `dir`.
    pub fn write_charts(&self, dir: &Path) {
        std::fs::create_dir_all(dir).unwrap();
        for chart in &self.charts {
            chart
                .write(dir)
                .unwrap_or_else(|e| panic!("chart {}: {e}", chart.file));
        }
    }

    pub fn render(&self) -> String {
        let mut s = String::from(
            "# Benchmarks\n\n\
             Written by `just bench` (bench/src/main.rs); rerun it rather than editing this \
             file.\n\n## Machine\n\n",
        );
        s.push_str(&self.machine);
        s.push_str(
            "\n## Method\n\n\
             One throwaway PostgreSQL 15 cluster (`supabash_devcluster::Cluster`: `fsync=off`, \
             `shared_buffers=256MB`, pg_stat_statements preloaded) with the installed release \
             build of the extension. The client is this binary, on the same machine, over TCP \
             on loopback. Every RPC is called as PostgREST calls it (`supabash_tests::SqlRpc`: one \
             transaction with `request.jwt.claims`, `SET LOCAL ROLE authenticated` and the \
             function called with named arguments), as `authenticator`, one user per \
             workspace. Times are wall-clock on the client around the whole round trip. \
             Variants that are compared run interleaved, round by round, in rotating order, \
             and results are nearest-rank medians (p90 for latencies) over N runs, because the \
             machine is small and shared with other work. `fsync=off` means commits do not \
             wait for the WAL to reach disk, so these are CPU-bound numbers.\n\n\
             ## Summary\n\n| measure | result | target | |\n|---|---|---|---|\n",
        );
        for row in &self.summary {
            let _ = writeln!(s, "| {} |", row.join(" | "));
        }
        s.push_str(&self.body);
        s.push_str(include_str!("../ANALYSIS.md"));
        s
    }
}
