//! The report's tables as rows of text, shared by the Markdown and HTML exporters.

use super::{Comparison, RunRow, StudyReport, VariantReport, VariantTelemetry};
use crate::status::Status;

pub struct Table {
    pub title: String,
    pub header: Vec<String>,
    pub rows: Vec<Vec<String>>,
}

fn pct(x: f64) -> String {
    format!("{:+.1}%", 100.0 * (x - 1.0))
}

/// A ratio as a change with its CI: "-47.2% [-48.6%, -45.8%]".
pub(super) fn change(e: &crate::stats::RatioEstimate) -> String {
    format!("{} [{}, {}]", pct(e.ratio), pct(e.ci.0), pct(e.ci.1))
}

/// A comparison's change and CI, and, when the study asks (`also_as`), the change as a
/// share of the larger side; `baseline` is what a comparison without `against` is against.
pub(super) fn change_of(c: &Comparison, baseline: &str) -> String {
    match &c.share_of_larger {
        Some(s) => {
            let reference = c.against.as_deref().unwrap_or(baseline);
            format!("{}; as a share of the larger: {}", change(&c.estimate), s.text(&c.variant, reference))
        }
        None => change(&c.estimate),
    }
}

/// A verdict beside its change and CI: the word alone, or why nothing was called.
pub(super) fn verdict_cell(c: &Comparison) -> String {
    match c.verdict {
        crate::stats::Verdict::NoSignificantDifference { .. } => c.verdict_text(),
        _ => c.word(),
    }
}

/// The p-value with its test, and the one its verdict tests when it was adjusted over the
/// variant's other measures.
fn p_cell(c: &Comparison) -> String {
    let e = &c.estimate;
    match e.p_adjusted {
        Some(p) => format!("{:.4} ({}); {p:.4} over {} measures", e.p_value, test_name(e.test), e.tested_among),
        None => format!("{:.4} ({})", e.p_value, test_name(e.test)),
    }
}

fn test_name(t: crate::stats::Test) -> &'static str {
    match t {
        crate::stats::Test::SignedRank => "signed-rank",
        crate::stats::Test::PairedT => "paired t",
    }
}

/// What the comparison's noise allows: the smallest change these blocks detect (80% power),
/// the per-block noise, and the blocks (and time) the CI target would take.
pub fn noise(e: &crate::stats::RatioEstimate, target: f64, seconds_per_block: f64) -> String {
    let need = e.blocks_for(target);
    format!(
        "detects {:.1}% (per-block noise {:.1}%); +-{:.1}% needs {need} blocks (~{:.0} min)",
        100.0 * e.detectable(),
        100.0 * e.noise_log(),
        100.0 * target,
        need as f64 * seconds_per_block / 60.0
    )
}

/// The verdict per variant: mean with CI, ratio with both CIs, p-value, noise, verdict.
pub fn verdicts(r: &StudyReport) -> Table {
    let m = r.metric.to_uppercase();
    let rows = r
        .variants
        .iter()
        .map(|v| {
            let name = v.info.name.clone();
            let Some(s) = &v.summary else {
                return vec![
                    name,
                    v.status.to_string(),
                    String::new(),
                    String::new(),
                    String::new(),
                    String::new(),
                    v.reason.clone().unwrap_or_default(),
                ];
            };
            let mean = format!("{} [{}, {}] (n={})", number(s.mean), number(s.ci.0), number(s.ci.1), s.n);
            match r.comparisons.iter().find(|c| c.variant == name) {
                Some(c) => {
                    let e = &c.estimate;
                    vec![
                        name,
                        mean,
                        change_of(c, &r.baseline),
                        format!("[{}, {}]", pct(e.bootstrap_ci.0), pct(e.bootstrap_ci.1)),
                        p_cell(c),
                        noise(e, r.targets().of(&c.variant, None), r.seconds_per_block),
                        verdict_cell(c),
                    ]
                }
                None => {
                    let blank = || String::new();
                    vec![name.clone(), mean, blank(), blank(), blank(), blank(), super::verdict_text(r, &name)]
                }
            }
        })
        .collect();
    Table {
        title: "Verdict".into(),
        header: [
            "variant",
            &format!("mean {m} [95% CI]"),
            "change vs baseline [95% CI]",
            "bootstrap CI",
            "p (test)",
            "noise: detectable change; blocks for the CI target",
            "verdict",
        ]
        .map(String::from)
        .to_vec(),
        rows,
    }
}

/// Each variant's stack, bottom up, with the layers that differ from the baseline's marked
/// (`*`) and the control each is also measured against.
pub fn stacks(r: &StudyReport) -> Table {
    // Every variant's layers, in stack order: the engine and server binaries are rows only
    // of the variants that name them.
    let mut layers: Vec<String> = vec![];
    for v in &r.variants {
        for (i, (layer, _)) in v.info.stack.iter().enumerate() {
            if !layers.contains(layer) {
                layers.insert(i.min(layers.len()), layer.clone());
            }
        }
    }
    let rows = r
        .variants
        .iter()
        .map(|v| {
            let i = &v.info;
            let mut row = vec![i.name.clone()];
            row.extend(layers.iter().map(|layer| {
                let shown = i.stack.iter().find(|(l, _)| l == layer).map_or("the study's", |(_, s)| s.as_str());
                match i.differs_from_baseline.contains(layer) {
                    true => format!("{shown} *"),
                    false => shown.to_string(),
                }
            }));
            row.push(match (&i.control, i.name == r.baseline) {
                (_, true) => "baseline".into(),
                (Some(c), _) if *c != r.baseline => format!("{}; control: {c}", r.baseline),
                _ => r.baseline.clone(),
            });
            row
        })
        .collect();
    let mut header = vec!["variant".to_string()];
    header.extend(layers);
    header.push("compared with".into());
    Table { title: "Variants as stacks of layers (* differs from the baseline)".into(), header, rows }
}

/// The engine settings each variant asked for, as the engine read them back in a run.
pub fn settings(r: &StudyReport) -> Table {
    let rows = r
        .variants
        .iter()
        .flat_map(|v| v.settings_in_force.iter().map(|(k, val)| vec![v.info.name.clone(), k.clone(), val.clone()]))
        .collect();
    let header = ["variant", "setting", "in force (read back from the engine)"].map(String::from).to_vec();
    Table { title: "Engine settings in force".into(), header, rows }
}

/// Each variant against its control, which differs from it in the encryption layer only:
/// the cost of the encryption itself, without the storage or FUSE layer it needs.
pub fn controls(r: &StudyReport) -> Table {
    against_others(
        r,
        |m| &m.controls,
        "Changes vs each variant's control (the same stack without the encryption)",
        "control",
    )
}

/// The variant pairs the study file names (`compare`), e.g. one encryptor against another.
pub fn pairs(r: &StudyReport) -> Table {
    against_others(r, |m| &m.pairs, "Variant against variant (the study's compare pairs)", "against")
}

/// Comparisons with other variants than the baseline, one row per measure.
fn against_others(
    r: &StudyReport,
    pick: fn(&super::MeasureReport) -> &Vec<super::Comparison>,
    title: &str,
    other: &str,
) -> Table {
    let rows = r
        .measures
        .iter()
        .flat_map(|m| {
            pick(m).iter().map(move |c| {
                let e = &c.estimate;
                vec![
                    m.measure.workload.clone(),
                    m.measure.name.clone(),
                    c.variant.clone(),
                    c.against.clone().unwrap_or_default(),
                    change_of(c, &r.baseline),
                    verdict_cell(c),
                    noise(e, r.targets().of(&c.variant, c.against.as_deref()), r.seconds_per_block),
                ]
            })
        })
        .collect();
    Table {
        title: title.into(),
        header: ["workload", "measure", "variant", other, "change [95% CI]", "verdict", "noise"]
            .map(String::from)
            .to_vec(),
        rows,
    }
}

/// A change of a percentage (CPU busy) in points, as seed 000 stated it ("+2.3 CPU
/// points"): the baseline's mean times the ratio's change and CI (approximate: the
/// baseline's own uncertainty is left out).
fn points(base_mean: f64, e: &crate::stats::RatioEstimate) -> String {
    let p = |r: f64| base_mean * (r - 1.0);
    format!(" (~{:+.1} points [{:+.1}, {:+.1}])", p(e.ratio), p(e.ci.0), p(e.ci.1))
}

/// Seed 002's table shape: one row per measure (a TPC-C profile's throughput, a batch
/// statement's latency), the baseline's mean, and each variant's change with its 95% CI
/// and verdict. Latency changes are positive when the variant is slower.
pub fn changes(r: &StudyReport) -> Table {
    let others: Vec<&str> = r.measures.iter().flat_map(|m| m.comparisons.iter().map(|c| c.variant.as_str())).fold(
        Vec::new(),
        |mut v, n| {
            if !v.contains(&n) {
                v.push(n);
            }
            v
        },
    );
    let rows = r
        .measures
        .iter()
        .map(|m| {
            let base = m.summaries.iter().find(|(n, _)| *n == r.baseline).map(|(_, s)| s);
            let mut row = vec![
                m.measure.workload.clone(),
                m.measure.name.clone(),
                base.map_or("-".into(), |s| format!("{} {}", number(s.mean), m.measure.unit)),
            ];
            for v in &others {
                row.push(m.comparisons.iter().find(|c| c.variant == *v).map_or("-".into(), |c| {
                    let points = base.filter(|_| m.measure.unit == "%").map(|b| points(b.mean, &c.estimate));
                    format!("{}{} {}", change_of(c, &r.baseline), points.unwrap_or_default(), c.word())
                }));
            }
            row
        })
        .collect();
    let mut header = vec!["workload".to_string(), "measure".into(), format!("{} (baseline)", r.baseline)];
    header.extend(others.iter().map(|v| format!("{v}: change [95% CI] verdict")));
    Table { title: "Changes vs baseline, per workload and measure".into(), header, rows }
}

/// Seed 003's table shape: one row per measure, each variant's mean and its 95% CI
/// half-width as +-% of the mean.
pub fn means(r: &StudyReport) -> Table {
    let names: Vec<&str> = r.variants.iter().filter(|v| v.summary.is_some()).map(|v| v.info.name.as_str()).collect();
    let rows = r
        .measures
        .iter()
        .map(|m| {
            let mut row = vec![m.measure.workload.clone(), format!("{} ({})", m.measure.name, m.measure.unit)];
            for n in &names {
                row.push(m.summaries.iter().find(|(v, _)| v == n).map_or("-".into(), |(_, s)| {
                    let half = (s.ci.1 - s.ci.0) / 2.0;
                    let rel = if s.n > 1 && s.mean != 0.0 {
                        format!(" +-{:.1}%", 100.0 * half / s.mean.abs())
                    } else {
                        String::new()
                    };
                    format!("{}{rel} (n={})", number(s.mean), s.n)
                }));
            }
            row
        })
        .collect();
    let mut header = vec!["workload".to_string(), "measure".into()];
    header.extend(names.iter().map(|n| format!("{n}: mean +-% (95%)")));
    Table { title: "Mean per variant, +-% at 95% confidence".into(), header, rows }
}

/// One variant's telemetry over one workload's runs: a row of the machine and disk tables.
struct TelemetryRow<'a> {
    variant: &'a VariantReport,
    /// The workload's label, when the study has several.
    workload: Option<&'a str>,
    t: &'a VariantTelemetry,
}

impl TelemetryRow<'_> {
    /// The row's leading cells: the variant, and its workload when there are several.
    fn lead(&self) -> Vec<String> {
        let mut cells = vec![self.variant.info.name.clone()];
        cells.extend(self.workload.map(String::from));
        cells
    }
}

/// Every variant's telemetry: the headline workload's, then each other workload's.
fn telemetries(r: &StudyReport) -> Vec<TelemetryRow<'_>> {
    let several = r.variants.iter().any(|v| !v.other_workloads.is_empty());
    let headline = several.then_some(r.measures.first().map_or("", |m| m.measure.workload.as_str()));
    r.variants
        .iter()
        .flat_map(|v| {
            let first = v.telemetry.as_ref().map(|t| TelemetryRow { variant: v, workload: headline, t });
            let others = v.other_workloads.iter().map(move |(w, t)| TelemetryRow { variant: v, workload: Some(w), t });
            first.into_iter().chain(others)
        })
        .collect()
}

/// The tables' leading header cells for `rows`.
fn lead_header(rows: &[TelemetryRow]) -> Vec<String> {
    let mut cells = vec!["variant".to_string()];
    if rows.iter().any(|r| r.workload.is_some()) {
        cells.push("workload".into());
    }
    cells
}

/// Seeds 000 and 001's machine table: CPU, pressure and power per variant (and workload),
/// averaged over the measurement windows of the runs.
pub fn machine(r: &StudyReport) -> Table {
    let all = telemetries(r);
    let rows = all
        .iter()
        .map(|row| {
            let (v, t) = (row.variant, row.t);
            let w = &t.window;
            let p = &t.power;
            let mut row = row.lead();
            row.extend([
                format!("{:.1}", w.cpu_busy_pct),
                format!(
                    "{:.1} / {:.1} / {:.1} / {:.1}",
                    w.cpu_user_pct, w.cpu_system_pct, w.cpu_iowait_pct, w.cpu_steal_pct
                ),
                format!("{:.0}", w.dbvs_cpu_pct),
                w.server_cpu_pct.map_or_else(|| t.server_cpu.clone(), |c| format!("{c:.0}")),
                format!("{:.1} / {:.1}", w.psi_cpu_some_pct, w.psi_io_some_pct),
                format!("{:.0}", w.ctxt_per_s),
                match (p.window_w, p.idle_w) {
                    (Some(w), Some(i)) => format!("{w:.1} ({i:.1} idle)"),
                    (Some(w), None) => format!("{w:.1}"),
                    _ => "unavailable".into(),
                },
                p.per_watt
                    .map_or("-".into(), |x| format!("{} {}", number(x), p.per_watt_unit.as_deref().unwrap_or(""))),
                v.limits.as_ref().map_or("-".into(), crate::sys::cgroup::describe),
            ]);
            row
        })
        .collect();
    let mut header = lead_header(&all);
    header.extend(
        [
            "CPU busy %",
            "user / system / iowait / steal %",
            "dbvs % of a core",
            "server % of a core",
            "PSI cpu / io %",
            "ctx switches/s",
            "power W",
            "per watt",
            "cgroup limits, per run",
        ]
        .map(String::from),
    );
    // Taking turns, the variants shared one machine: its figures are the same for each.
    let title = match r.design.iter().any(|d| d.slice.is_some()) {
        true => "Machine during the runs (window averages), one machine the variants shared taking turns",
        false => "Machine during the runs (window averages)",
    };
    Table { title: title.into(), header, rows }
}

/// Per variant (and workload) and device under its volumes: iostat's figures (both the
/// upper and the backing device of an encrypted layer; the log's devices when a server's
/// log is kept apart).
pub fn disks(r: &StudyReport) -> Table {
    let all = telemetries(r);
    let mut rows = Vec::new();
    for row in &all {
        for (d, x) in &row.t.window.disks {
            let mut cells = row.lead();
            cells.extend([
                crate::telemetry::devices::describe(d, &row.t.layers),
                format!("{:.1}", x.reads_s),
                format!("{:.1}", x.writes_s),
                format!("{:.1}", x.tps),
                format!("{:.2}", x.read_mb_s),
                format!("{:.2}", x.write_mb_s),
                format!("{:.2}", x.await_ms),
                format!("{:.1}", x.util_pct),
            ]);
            rows.push(cells);
        }
    }
    let mut header = lead_header(&all);
    header.extend(
        ["device", "r/s", "w/s", "transfers/s", "read MB/s", "write MB/s", "await ms", "util %"].map(String::from),
    );
    Table { title: "Disks under the data (window averages)".into(), header, rows }
}

/// Seeds 000 and 001's per-client table: each instance's headline (mean over runs) per
/// variant, and the total. Empty when runs had one instance.
pub fn instances(r: &StudyReport) -> Table {
    let vs: Vec<_> = r.variants.iter().filter(|v| !v.per_instance.is_empty()).collect();
    let n = vs.iter().map(|v| v.per_instance.len()).max().unwrap_or(0);
    let mut rows: Vec<Vec<String>> = (0..n)
        .map(|i| {
            let mut row = vec![format!("instance {}", i + 1)];
            row.extend(vs.iter().map(|v| v.per_instance.get(i).map_or("-".into(), |x| number(*x))));
            row
        })
        .collect();
    if n > 0 {
        let mut total = vec!["total".to_string()];
        total.extend(vs.iter().map(|v| number(v.per_instance.iter().sum())));
        rows.push(total);
    }
    let mut header = vec![r.metric.clone()];
    header.extend(vs.iter().map(|v| v.info.name.clone()));
    Table { title: "Per instance (mean over runs)".into(), header, rows }
}

/// Large values without decimals, small ones with two.
pub fn number(x: f64) -> String {
    if x.abs() >= 100.0 {
        format!("{x:.0}")
    } else {
        format!("{x:.2}")
    }
}

/// Seed-style: one row per block, one column per variant, then mean and change rows, for
/// the headline measure.
pub fn per_run(r: &StudyReport) -> Table {
    let names: Vec<&str> = r.variants.iter().filter(|v| v.summary.is_some()).map(|v| v.info.name.as_str()).collect();
    let headline = r.measures.first().map(|m| m.measure.workload.as_str());
    let runs: Vec<_> = r.runs.iter().filter(|x| headline.is_none_or(|w| x.workload == w)).collect();
    let blocks = runs.iter().map(|x| x.block + 1).max().unwrap_or(0);
    let value = |x: &RunRow| x.metric.filter(|_| x.status == Status::Completed);
    // Each variant's median run (the lower middle of an even count), as seed 000 reported it.
    let median_block = |n: &str| {
        let mut done: Vec<(f64, usize)> =
            runs.iter().filter(|x| x.variant == n).filter_map(|x| Some((value(x)?, x.block))).collect();
        done.sort_by(|a, b| a.0.total_cmp(&b.0));
        done.get(done.len().saturating_sub(1) / 2).map(|(_, b)| *b)
    };
    let medians: Vec<Option<usize>> = names.iter().map(|n| median_block(n)).collect();
    let mut rows: Vec<Vec<String>> = (0..blocks)
        .map(|b| {
            let mut row = vec![format!("block {}", b + 1)];
            for (n, median) in names.iter().zip(&medians) {
                let cell = runs.iter().find(|x| x.block == b && x.variant == *n).map_or("-".to_string(), |x| {
                    let mark = if *median == Some(b) { " (median run)" } else { "" };
                    value(x).map_or(x.status.to_string(), |v| format!("{}{mark}", number(v)))
                });
                row.push(cell);
            }
            row
        })
        .collect();
    let summary_of = |n: &str| r.variants.iter().find(|v| v.info.name == n).and_then(|v| v.summary.clone());
    rows.push(
        std::iter::once("total".to_string())
            .chain(names.iter().map(|n| summary_of(n).map_or(String::new(), |s| number(s.mean * s.n as f64))))
            .collect(),
    );
    rows.push(
        std::iter::once("mean".to_string())
            .chain(names.iter().map(|n| summary_of(n).map_or(String::new(), |s| number(s.mean))))
            .collect(),
    );
    rows.push(
        std::iter::once("median".to_string())
            .chain(names.iter().map(|n| summary_of(n).map_or(String::new(), |s| number(s.median))))
            .collect(),
    );
    rows.push(
        std::iter::once("change vs baseline".to_string())
            .chain(names.iter().map(|n| {
                r.comparisons.iter().find(|c| c.variant == *n).map_or("baseline".into(), |c| change_of(c, &r.baseline))
            }))
            .collect(),
    );
    rows.push(std::iter::once("verdict".to_string()).chain(names.iter().map(|n| super::verdict_text(r, n))).collect());
    Table {
        title: "Runs".into(),
        header: std::iter::once(r.metric.to_uppercase()).chain(names.iter().map(|n| n.to_string())).collect(),
        rows,
    }
}

pub fn latency(r: &StudyReport) -> Table {
    let mut rows = Vec::new();
    for v in &r.variants {
        for (op, l) in &v.latency {
            rows.push(vec![
                v.info.name.clone(),
                op.clone(),
                format!("{:.2}", l.avg_ms),
                format!("{:.2}", l.p50_ms),
                format!("{:.2}", l.p90_ms),
                format!("{:.2}", l.p95_ms),
                format!("{:.2}", l.p99_ms),
                format!("{:.2}", l.max_ms),
            ]);
        }
    }
    Table {
        title: "Latency (ms, median over runs)".into(),
        header: ["variant", "operation", "avg", "p50", "p90", "p95", "p99", "max"].map(String::from).to_vec(),
        rows,
    }
}

pub fn canary(r: &StudyReport) -> Table {
    Table {
        title: "Plaintext canary scan".into(),
        header: [
            "variant",
            "encrypted at rest",
            "scanned (in the study's work directory)",
            "bytes",
            "canary hits",
            "result",
        ]
        .map(String::from)
        .to_vec(),
        rows: r
            .canary
            .iter()
            .map(|c| {
                vec![
                    c.variant.clone(),
                    c.encrypted.to_string(),
                    c.scanned.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", "),
                    c.bytes_scanned.to_string(),
                    c.hits.to_string(),
                    if c.ok { "ok".into() } else { "LEAK: plaintext found".into() },
                ]
            })
            .collect(),
    }
}

pub fn sut(r: &StudyReport) -> Table {
    let h = &r.sut.host;
    let mut rows = vec![
        vec![
            "CPU".into(),
            format!("{} ({} cores, AES-NI {})", h.cpu_model, h.cores, if h.aes_ni { "yes" } else { "no" }),
        ],
        vec![
            "memory".into(),
            format!(
                "{:.1} GiB; proactive reclaim: {}",
                h.memory_bytes as f64 / (1u64 << 30) as f64,
                h.proactive_reclaim.as_deref().unwrap_or("none")
            ),
        ],
        vec!["OS / kernel".into(), format!("{} / {}", h.os, h.kernel)],
        vec!["engine".into(), r.sut.engine.to_string()],
    ];
    rows.extend(r.sut.engine_versions.iter().map(|(k, v)| vec![format!("{k} version"), v.clone()]));
    rows.push(vec!["dbvs".into(), r.sut.dbvs_version.clone()]);
    rows.push(vec!["workload".into(), r.sut.workload.to_string()]);
    for v in &r.variants {
        let i = &v.info;
        let mut s = format!("layer: {}; cipher: {}", i.layer, i.cipher);
        if let Some(k) = i.key_bits {
            s += &format!("; key: {k} bits");
        }
        s += &format!("; AES-NI: {}", if i.aesni { "on" } else { "masked" });
        for (k, val) in &i.settings {
            s += &format!("; {k}: {val}");
        }
        rows.push(vec![format!("variant {}", i.name), s]);
    }
    Table { title: "System under test".into(), header: vec!["".into(), "".into()], rows }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn machine_and_disk_tables_cover_every_workload_of_a_study() {
        let mut r = super::super::sample::report();
        let t = |busy: f64| VariantTelemetry {
            runs: 6,
            window: crate::telemetry::Sample {
                cpu_busy_pct: busy,
                disks: [("vda".to_string(), Default::default())].into(),
                ..Default::default()
            },
            power: Default::default(),
            server_cpu: "n/a".into(),
            layers: vec![],
        };
        assert!(machine(&r).rows.is_empty(), "no telemetry, no rows");
        r.variants[0].telemetry = Some(t(41.0));
        assert_eq!(machine(&r).header[1], "CPU busy %", "one workload: no workload column");
        r.variants[0].other_workloads = vec![("tpcc/profile-2".into(), t(77.0))];
        let m = machine(&r);
        assert_eq!(m.header[..3], ["variant", "workload", "CPU busy %"]);
        assert_eq!(m.rows.len(), 2);
        assert_eq!(m.rows[0][..3], ["plain", "ds2", "41.0"]);
        assert_eq!(m.rows[1][..3], ["plain", "tpcc/profile-2", "77.0"]);
        let d = disks(&r);
        assert_eq!(d.rows.iter().map(|row| row[1].as_str()).collect::<Vec<_>>(), ["ds2", "tpcc/profile-2"]);
    }
}
