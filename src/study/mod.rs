//! Studies: variants x workloads, run in randomized complete blocks until every ratio to
//! the baseline is known to the target precision or the budget is spent.
//!
//! Each block runs every (variant, workload) pair once, in a fresh random order, each on a
//! fresh copy of its pristine database, each in its own `dbvs run` child process (so AES-NI
//! masking reaches OpenSSL at start-up and runs cannot share state). Every finished run is
//! committed to the results store at once. Variants live in a work directory that is torn
//! down on every exit. Each workload contributes its measures ([`measures`]): throughput,
//! or the batch suite's latency per statement.

mod allocate;
mod controls;
pub mod design;
pub mod file;
pub mod ladder;
mod live;
pub mod measures;
pub mod quick;
mod redact;
mod resume;
mod summary;
mod text;

use crate::cipher::table::AesTable;
use crate::driver::RunStatus;
use crate::interrupt;
use crate::record::CanaryResult;
use crate::record::RunRecord;
use crate::report::{self, RunRow, StudyReport};
use crate::run::launch;
use crate::run::workdir::WorkDir;
use crate::status::Status;
use crate::store::{Placement, Store};
use crate::sys::names::slug;
use crate::variants::{Prepared, VariantConfig};
use anyhow::{bail, Context, Result};
use file::StudyFile;
use rand::seq::SliceRandom;
use rand::SeedableRng;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

pub struct Options {
    /// Overrides the study file's budget.
    pub budget: Option<Duration>,
    /// Where reports, run records and logs go.
    pub out: Option<PathBuf>,
    pub store: PathBuf,
    /// Take up this unfinished study again, from its first incomplete block.
    pub resume: Option<i64>,
    /// Serve the study's progress as live metrics here (see `openmetrics`).
    pub metrics_addr: Option<String>,
    /// Run the study file's quick form (see [`quick`]).
    pub quick: bool,
    /// Overrides the study file's `interleave` (see [`design`]).
    pub interleave: Option<design::Interleave>,
}

pub struct Outcome {
    pub report: StudyReport,
    pub out_dir: PathBuf,
    /// Only the stored blocks were reported (`--resume ID --budget 0`).
    pub report_only: bool,
}

/// A variant taking part in the study.
struct Active {
    cfg: VariantConfig,
    prepared: Prepared,
    /// Per measure key, the value per block; `None` where the run failed or was not run.
    values: BTreeMap<String, Vec<Option<f64>>>,
    /// Run records with the label of their workload.
    records: Vec<(String, RunRecord)>,
    failed: Option<String>,
}

pub fn run(path: &Path, opts: Options) -> Result<Outcome> {
    let mut store = Store::open(&opts.store)?;
    // A study that ran its quick form resumes in it, --quick given again or not.
    let ran_quick = |id| StudyFile::load(path, true).is_ok_and(|(_, quick)| store.study_file(id).ok() == Some(quick));
    let quick = opts.quick || opts.resume.is_some_and(ran_quick);
    let (mut study, text) = StudyFile::load(path, quick)?;
    if opts.interleave.is_some() {
        study.interleave = opts.interleave;
    }
    // `--resume ID --budget 0` only reports the stored blocks: nothing is set up or run,
    // and the study keeps the status it had, so it can still be resumed.
    let report_only = match opts.resume {
        Some(id) if opts.budget == Some(Duration::ZERO) => Some(store.study(id)?.0),
        _ => None,
    };
    // An --out that cannot be written is bad input: said before the study is in the store.
    if let Some(out) = &opts.out {
        std::fs::create_dir_all(out)
            .with_context(|| format!("cannot create {}; choose a writable --out", out.display()))?;
    }
    let (id, stored) = match opts.resume {
        Some(id) => (id, store.resume_study(id, &text)?),
        None => (store.begin_study(&study.name, &text)?, vec![]),
    };
    let result = run_blocks(&study, &text, opts, &mut store, id, &stored, report_only.as_ref());
    if let Err(e) = &result {
        // A study that never got to a report still ends in the store, with its cause.
        let status = if e.is::<interrupt::Interrupted>() { Status::Interrupted } else { Status::Failed };
        store.finish_study(id, status, Some(&format!("{e:#}")), None)?;
    }
    result
}

fn run_blocks(
    study: &StudyFile,
    text: &str,
    opts: Options,
    store: &mut Store,
    id: i64,
    stored: &[crate::store::RunRow],
    report_only: Option<&crate::store::StudyRow>,
) -> Result<Outcome> {
    let budget = opts.budget.unwrap_or(study.budget);
    let out_dir = opts.out.clone().unwrap_or_else(|| default_out(&study.name, id));
    let started_at = now();
    // A report of what is stored sets nothing up: no RAM disks.
    let disk = if report_only.is_some() { &crate::run::config::Disk::Host } else { &study.target.disk };
    let (work, live_dir, live) = open_output(&out_dir, id, opts.metrics_addr.as_deref(), disk, study.variants.len())?;
    let exe = std::env::current_exe()?;
    let ctx = study.launcher(&exe, &out_dir, &work, live_dir.as_deref());

    eprintln!("study {id} '{}': results store {}, output {}", study.name, store.path.display(), out_dir.display());
    if let Some(disk) = work.disk_model() {
        eprintln!("disk: {disk}");
    }
    for w in &study.warnings {
        eprintln!("warning: {w}");
    }
    let (mut active, skipped) = match report_only {
        Some(_) => (study.variants.iter().map(|v| Active::new(v.clone(), Prepared::not_set_up())).collect(), vec![]),
        None => set_up_variants(&ctx, study, &work)?,
    };
    let workloads = match report_only {
        Some(_) => study.workloads.clone(),
        None => calibrate(&ctx, &active[0], &study.workloads)?,
    };
    let aes_table = aes_table_of(study, store, id, report_only.is_none())?;
    let (plan, suites, all_measures) = plan(study, workloads)?;
    let (rows, first) = resume::preload(&mut active, &plan.per_workload.concat(), stored);
    fill_suites(&mut active, &suites);
    if first > 0 {
        eprintln!("resuming study {id} at block {} (blocks 1-{first} are in the store)", first + 1);
    }
    let mut gathered = Gathered { rows, canaries: vec![], leak: None };
    let blocks =
        Blocks { ctx: &ctx, study, budget, plan: &plan, suites: &suites, measures: &all_measures, live: live.as_ref() };
    let Ending { mut status, stop_reason, block_times } = match report_only {
        Some(row) => Ending {
            status: (row.status, row.cause.clone()),
            stop_reason: format!("report only (--budget 0): {first} stored blocks, nothing set up or run"),
            block_times: vec![],
        },
        None => blocks.run(store, id, &mut active, &mut gathered, first)?,
    };
    if status.0 == Status::Completed {
        status = none_compared(&active, &skipped).map_or(status, |cause| (Status::Failed, Some(cause)));
    }
    let report = summary::build(summary::Inputs {
        id,
        study,
        text,
        measures: &all_measures,
        active: &active,
        skipped: &skipped,
        rows: gathered.rows,
        canaries: gathered.canaries,
        status: status.0,
        cause: status.1,
        stop_reason,
        started_at,
        block_times: &block_times,
        aes_table,
    });
    store.finish_study(id, report.status, report.cause.as_deref(), Some(&serde_json::to_string(&report)?))?;
    report::write_all(&report, &out_dir)?;
    report::write_samples(&store.runs_of(id)?, &out_dir)?;
    if let Some(e) = &live {
        live::ended(e);
    }
    drop(active);
    Ok(Outcome { report, out_dir, report_only: report_only.is_some() })
}

/// What the block loop works with, set up once before the first block.
struct Blocks<'a> {
    ctx: &'a launch::Context<'a>,
    study: &'a StudyFile,
    budget: Duration,
    plan: &'a Plan,
    suites: &'a [measures::Suite],
    measures: &'a [measures::Measure],
    live: Option<&'a crate::openmetrics::Exporter>,
}

/// How the blocks ended: the study's status with its cause, why it stopped, and what each
/// block took.
struct Ending {
    status: (Status, Option<String>),
    stop_reason: String,
    block_times: Vec<f64>,
}

impl Blocks<'_> {
    /// Runs blocks from `first` on until a block ends the study (a leak, every variant
    /// failed), every interval is precise enough, the next block would overrun the budget,
    /// or the study's maximum is reached.
    fn run(
        &self,
        store: &mut Store,
        id: i64,
        active: &mut [Active],
        gathered: &mut Gathered,
        first: usize,
    ) -> Result<Ending> {
        let (study, budget) = (self.study, self.budget);
        let mut block_times: Vec<f64> = Vec::new();
        let begun = Instant::now();
        let mut shares = allocate::Plan::new(active.len());
        for block in first..study.blocks.max {
            let expected = next_block_time(&block_times);
            if block > 0 && begun.elapsed().as_secs_f64() + expected > budget.as_secs_f64() {
                let mut stop_reason =
                    format!("budget of {} used after {block} blocks", humantime::format_duration(budget));
                if block < study.blocks.min {
                    // The budget wins (it is the user's promise of wall time), said plainly.
                    stop_reason += &format!(
                        ", fewer than the {} the study asks for: raise budget or shorten the runs",
                        study.blocks.min
                    );
                }
                return Ok(Ending { status: (Status::Completed, None), stop_reason, block_times });
            }
            let t = Instant::now();
            run_block(self.ctx, store, id, self.plan, active, (block, first, &shares), gathered)?;
            block_times.push(t.elapsed().as_secs_f64());
            fill_suites(active, self.suites);
            if let Some((status, stop_reason)) = ended_in_block(active, gathered, block) {
                return Ok(Ending { status, stop_reason, block_times });
            }
            let block_time = *block_times.last().unwrap_or(&0.0);
            let more = blocks_left(study.blocks.max - block - 1, budget.saturating_sub(begun.elapsed()), &block_times);
            if let Some(stop_reason) =
                progress(study, active, self.measures, (block, block_time, more), self.live, &mut shares)
            {
                return Ok(Ending { status: (Status::Completed, None), stop_reason, block_times });
            }
        }
        let stop_reason = format!("maximum of {} blocks reached", study.blocks.max);
        Ok(Ending { status: (Status::Completed, None), stop_reason, block_times })
    }
}

/// The study's AES table: the one it kept (a resumed study, or its stored blocks
/// reported), else measured now and kept at once, so an interrupted study does not lose
/// it; `None` when the file asks for none, or when nothing may run and none was kept.
fn aes_table_of(study: &StudyFile, store: &Store, id: i64, may_measure: bool) -> Result<Option<AesTable>> {
    let Some(config) = &study.aes_table else { return Ok(None) };
    if let Some(kept) = store.aes_table(id)? {
        eprintln!("AES table: the one study {id} measured before its first block");
        return Ok(Some(kept));
    }
    if !may_measure {
        return Ok(None);
    }
    let table = aes_table(config)?;
    store.keep_aes_table(id, &table)?;
    Ok(Some(table))
}

/// Seed 000's AES table, measured before the blocks with the machine otherwise quiet: in
/// memory, one thread per core, AES-NI on and off.
fn aes_table(t: &file::AesTableConfig) -> Result<AesTable> {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let on_and_off = crate::cipher::table::Settings { on: true, off: true };
    let table = crate::cipher::table::measure(&t.ciphers, &t.sizes()?, threads, t.runs, on_and_off)?;
    let sizes = table.series.first().map_or(0, |s| s.points.len());
    eprintln!("AES table: {sizes} buffer sizes, AES-NI on and off, median of {} run(s) ({})", t.runs, table.openssl);
    Ok(table)
}

/// What the blocks run and measure: each workload's design and measures, the suites over
/// them, and every measure in the report's order.
fn plan(
    study: &StudyFile,
    workloads: Vec<file::WorkloadConfig>,
) -> Result<(Plan, Vec<measures::Suite>, Vec<measures::Measure>)> {
    let designs: Vec<report::Design> = workloads.iter().map(|w| study.design(w)).collect();
    for d in &designs {
        eprintln!("{}", d.text());
    }
    let per_workload: Vec<Vec<measures::Measure>> = workloads
        .iter()
        .zip(&designs)
        .map(|(w, d)| measures::of(w, study.seed, setting(study, d)))
        .collect::<Result<_>>()?;
    let suites = measures::suites(&workloads, study.seed)?;
    let takes_backups = workloads.iter().any(|w| w.kind().is_ok_and(|k| k.takes_backups()));
    // A study that opens with a suite (bignw's ten benchmarks) is answered by the suite's
    // mean, as seed 003's was by the average over its ten.
    let (lead, rest): (Vec<&measures::Suite>, Vec<_>) = suites.iter().partition(|s| s.entry == workloads[0].entry);
    let all_measures: Vec<measures::Measure> = lead
        .iter()
        .map(|s| s.measure.clone())
        .chain(per_workload.concat())
        .chain(rest.iter().map(|s| s.measure.clone()))
        .collect();
    let slice_named = study.interleave.is_some();
    Ok((Plan { workloads, per_workload, takes_backups, designs, slice_named }, suites, all_measures))
}

/// The output directory's runs and logs, the study's work directory, and the live metrics
/// endpoint with the directory where the runs publish their figures for it to serve.
fn open_output(
    out_dir: &Path,
    id: i64,
    metrics_addr: Option<&str>,
    disk: &crate::run::config::Disk,
    variants: usize,
) -> Result<(WorkDir, Option<PathBuf>, Option<crate::openmetrics::Exporter>)> {
    for sub in ["runs", "logs"] {
        std::fs::create_dir_all(out_dir.join(sub))
            .with_context(|| format!("cannot create {}; choose a writable --out", out_dir.display()))?;
    }
    let what = format!("study {id} work directory");
    let work = WorkDir::new(out_dir, &what, disk, variants)?;
    let live_dir = metrics_addr.is_some().then(|| work.path().join("live"));
    if let Some(dir) = &live_dir {
        std::fs::create_dir_all(dir)?;
    }
    let live = match metrics_addr {
        Some(addr) => Some(crate::openmetrics::Exporter::serve(addr, live_dir.clone())?),
        None => None,
    };
    Ok((work, live_dir, live))
}

/// Why no variant could be compared with the baseline, when every one failed or was skipped.
fn none_compared(active: &[Active], skipped: &Skipped) -> Option<String> {
    if !active[1..].iter().all(|a| a.failed.is_some()) {
        return None;
    }
    let causes: Vec<String> = active[1..]
        .iter()
        .map(|a| format!("{}: {}", a.cfg.name, a.failed.as_deref().unwrap_or("")))
        .chain(skipped.iter().map(|(v, why)| format!("{}: skipped: {why}", v.name)))
        .collect();
    Some(format!("no variant could be compared with the baseline ({})", causes.join("; ")))
}

/// The workloads as the blocks run them (calibrated), and what each is measured by.
struct Plan {
    workloads: Vec<file::WorkloadConfig>,
    per_workload: Vec<Vec<measures::Measure>>,
    /// A workload takes backups: the canary scan follows its run, to cover a backup too.
    takes_backups: bool,
    /// How each workload's variants are measured: taking turns in slices, or each alone.
    designs: Vec<report::Design>,
    /// The study names its slice (`interleave`): variants with a FUSE daemon take turns too.
    slice_named: bool,
}

/// What the blocks gathered beside each variant's own values.
struct Gathered {
    rows: Vec<RunRow>,
    canaries: Vec<CanaryResult>,
    /// What a canary scan found at rest: the study stops on it.
    leak: Option<String>,
}

/// Runs block `block`: every (workload, variant) pair once, in a fresh random order, the
/// variants that take turns first (in interleaved runs), each run stored as it ends. The
/// first block of a run (`first`) scans each variant's data at rest for the canary.
fn run_block(
    ctx: &launch::Context,
    store: &mut Store,
    id: i64,
    plan: &Plan,
    active: &mut [Active],
    (block, first, shares): (usize, usize, &allocate::Plan),
    got: &mut Gathered,
) -> Result<()> {
    let order = block_order(active, plan.workloads.len(), ctx.seed ^ (block as u64) << 20);
    let mut shared = interleaved(ctx, active, plan, (block, shares), block == first);
    for (wi, i) in order {
        let a = &mut active[i];
        if a.failed.is_some() {
            continue;
        }
        let w = &plan.workloads[wi];
        let scan = block == first
            && scans_after(w, plan.takes_backups)
            && !got.canaries.iter().any(|c| c.variant == a.cfg.name);
        let result = match shared.remove(&(wi, i)) {
            Some(result) => result,
            None => launch::run(ctx, &a.cfg, &a.prepared, w, &format!("block{:02}", block + 1), scan),
        };
        let at = Placement { study: id, block, variant: &a.cfg.name, workload: &w.label() };
        let (row, record) = record_run(store, at, w, result)?;
        if let Some(cause) = row.cause.clone().filter(|_| row.status == Status::Failed) {
            eprintln!("variant {}: {} run failed: {cause}", a.cfg.name, w.label());
            a.failed = Some(cause);
        }
        for c in record.iter().filter(|r| r.status == RunStatus::Completed).flat_map(|r| &r.checks).filter(|c| !c.ok) {
            eprintln!(
                "variant {}: {} run of block {} does not count: {}: {}",
                a.cfg.name,
                w.label(),
                block + 1,
                c.name,
                c.detail
            );
        }
        for m in &plan.per_workload[wi] {
            let per_block = a.values.entry(m.key()).or_default();
            per_block.resize(block + 1, None);
            per_block[block] = record.as_ref().filter(|r| r.counts()).and_then(|r| r.measure(&m.name));
        }
        let value = record.is_some();
        if let Some(r) = record {
            a.records.push((w.label(), r));
        }
        got.rows.push(row);
        if scan && value {
            let c = launch::scan_canary(&a.cfg.name, &a.prepared, ctx.work.path())?;
            if !c.ok {
                got.leak = Some(leak_message(&c));
            }
            got.canaries.push(c);
        }
        if interrupt::interrupted() {
            break;
        }
    }
    Ok(())
}

/// Whether a variant's first run of `w` is followed by the canary scan: a workload that
/// leaves data at rest (the cipher benchmark works in memory), and where a workload takes
/// backups, that one (its backup is scanned too).
fn scans_after(w: &file::WorkloadConfig, takes_backups: bool) -> bool {
    let kind = w.kind().ok();
    let leaves_data = kind.as_ref().is_some_and(|k| k.leaves_data());
    leaves_data && (!takes_backups || kind.is_some_and(|k| k.takes_backups()))
}

/// How the study ends after block `block`, if it must: interrupted, plaintext found at
/// rest, or a baseline that cannot run.
fn ended_in_block(active: &[Active], got: &Gathered, block: usize) -> Option<((Status, Option<String>), String)> {
    if interrupt::interrupted() {
        return Some(((Status::Interrupted, None), format!("interrupted during block {}", block + 1)));
    }
    if let Some(leak) = &got.leak {
        return Some(((Status::Failed, Some(leak.clone())), "stopped: the plaintext canary scan failed".into()));
    }
    let cause = active[0].failed.as_ref()?;
    Some((
        (Status::Failed, Some(format!("the baseline's run failed: {cause}"))),
        "stopped: the baseline cannot run".into(),
    ))
}

/// Says how far block `block` (done in `secs`, `more` blocks left) brought every interval,
/// serves it live, and plans the next block's shares; the reason to stop, once the targets
/// are reached or nothing is left to compare.
fn progress(
    study: &StudyFile,
    active: &[Active],
    all_measures: &[measures::Measure],
    (block, secs, more): (usize, f64, usize),
    live: Option<&crate::openmetrics::Exporter>,
    shares: &mut allocate::Plan,
) -> Option<String> {
    let widths = summary::half_widths(active, all_measures, study);
    if let Some(e) = live {
        live::block_done(e, block + 1, secs, &widths, active, all_measures);
    }
    eprintln!("block {} done in {secs:.0} s; {}", block + 1, summary::progress_line(&widths));
    if let Some(beyond) = precise_enough(block + 1, study.blocks.min, &widths, more) {
        let mut why = format!(
            "precision reached: every ratio's 95% CI half-width <= {} after {} blocks",
            study.targets().text(),
            block + 1
        );
        if !beyond.is_empty() {
            why += &format!(", but not {}: beyond the budget", beyond.join(", "));
        }
        return Some(why);
    }
    // Time goes to the ratios it can bring to their targets.
    let within_reach: Vec<summary::Width> =
        widths.iter().filter(|w| !w.out_of_reach(block + 1, more)).cloned().collect();
    shares.plan(block + 1, &within_reach);
    let by_need = study.workloads.iter().any(|w| study.design(w).slice.is_some() && w.shares_by_need());
    if by_need && !shares.slices(&(0..active.len()).collect::<Vec<_>>()).is_empty() {
        let each: Vec<String> =
            active.iter().zip(shares.next()).map(|(a, s)| format!("{} {:.0}%", a.cfg.name, 100.0 * s)).collect();
        eprintln!("next block's shares of the measured time, by what each interval still needs: {}", each.join(", "));
    }
    widths.is_empty().then(|| "no variant left to compare with the baseline".into())
}

/// What the study measures of `w` beside its own measures.
fn setting(study: &StudyFile, design: &report::Design) -> measures::Setting {
    measures::Setting {
        engines: study.engines(),
        alone: design.slice.is_none(),
        power: study
            .power
            .parse::<crate::telemetry::power::PowerSpec>()
            .is_ok_and(|p| p != crate::telemetry::power::PowerSpec::None),
    }
}

/// Each suite's per-block values, from its members' so far.
fn fill_suites(active: &mut [Active], suites: &[measures::Suite]) {
    for a in active {
        for s in suites {
            let values = s.values(&a.values);
            a.values.insert(s.measure.key(), values);
        }
    }
}

impl Active {
    fn new(cfg: VariantConfig, prepared: Prepared) -> Self {
        Active { cfg, prepared, values: BTreeMap::new(), records: vec![], failed: None }
    }
}

/// Variants that could not be set up, with the cause.
type Skipped = Vec<(VariantConfig, String)>;

/// Sets every variant up in the work directory; a variant that cannot be is skipped with
/// its cause (the baseline cannot be skipped).
fn set_up_variants(ctx: &launch::Context, study: &StudyFile, work: &WorkDir) -> Result<(Vec<Active>, Skipped)> {
    let (mut active, mut skipped) = (Vec::new(), Vec::new());
    for (i, v) in study.variants.iter().enumerate() {
        match launch::prepare(ctx, v, work.place(i), &study.workloads) {
            Ok(prepared) => active.push(Active::new(v.clone(), prepared)),
            // A set-up cut short by Ctrl-C is the study's interruption, not the variant's fault.
            Err(_) if interrupt::interrupted() => return Err(interrupt::Interrupted.into()),
            Err(e) if i == 0 => bail!("the baseline variant '{}' cannot run: {e:#}", v.name),
            Err(e) => {
                eprintln!("variant {}: skipped: {e:#}", v.name);
                skipped.push((v.clone(), format!("{e:#}")));
            }
        }
        if interrupt::interrupted() {
            return Err(interrupt::Interrupted.into());
        }
    }
    Ok((active, skipped))
}

/// The order of one block's runs: workloads in random order and, for each, every variant
/// in random order, back to back. Each comparison is then made between runs close in time
/// (seed 003's balanced order: each benchmark on every instance in turn).
fn block_order(active: &[Active], workloads: usize, seed: u64) -> Vec<(usize, usize)> {
    let rng = &mut rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let mut ws: Vec<usize> = (0..workloads).collect();
    ws.shuffle(rng);
    let mut order = Vec::new();
    for w in ws {
        let mut vs: Vec<usize> = (0..active.len()).filter(|&i| active[i].failed.is_none()).collect();
        vs.shuffle(rng);
        order.extend(vs.into_iter().map(|v| (w, v)));
    }
    order
}

/// Runs each timed workload's variants interleaved: those that can share a process in
/// one run, each of the others in a run of its own taking turns with it (where the
/// workload allows: see `WorkloadConfig::turns_across_processes`). Returns their results
/// by (workload, variant); the rest run alone in the block as usual.
fn interleaved(
    ctx: &launch::Context,
    active: &[Active],
    plan: &Plan,
    (block, shares): (usize, &allocate::Plan),
    scan: bool,
) -> BTreeMap<(usize, usize), Result<RunRecord>> {
    let mut out = BTreeMap::new();
    let sliced = plan.workloads.iter().zip(&plan.designs).enumerate();
    for (wi, (w, slice)) in sliced.filter_map(|(wi, (w, d))| Some((wi, (w, d.slice?)))) {
        // Each block its own slice order, drawn from the study's seed.
        let seed = ctx.seed ^ ((block as u64 + 1) << 32) ^ wi as u64;
        // Those that run alone (see `design::alone_in`) do so after, in the block's order.
        let taking_turns = (0..active.len())
            .filter(|&i| active[i].failed.is_none() && design::alone_in(&active[i].cfg, w, plan.slice_named).is_none());
        let (mut sharing, own): (Vec<usize>, Vec<usize>) =
            taking_turns.partition(|&i| !w.a_process_per_variant() && launch::can_share(&active[i].prepared));
        let own = if w.turns_across_processes() { own } else { vec![] };
        // Each block also sets its variants up in a random order: whatever comes with being
        // first (memory laid out first, threads started first) would otherwise favour one
        // variant for a whole study, where no block-level interval can see it.
        let rng = &mut rand_chacha::ChaCha8Rng::seed_from_u64(seed ^ 0x51DE5);
        sharing.shuffle(rng);
        let mut groups: Vec<Vec<usize>> =
            Some(sharing).filter(|s| !s.is_empty()).into_iter().chain(own.into_iter().map(|i| vec![i])).collect();
        groups.shuffle(rng);
        if groups.iter().map(Vec::len).sum::<usize>() < 2 || interrupt::interrupted() {
            continue;
        }
        let sides: Vec<Vec<_>> =
            groups.iter().map(|g| g.iter().map(|&i| (&active[i].cfg, &active[i].prepared)).collect()).collect();
        // The canary scan follows each variant's first run, of the first workload only.
        let keep = scan && wi == 0;
        let schedule = launch::Schedule {
            slice,
            seed,
            shares: if w.shares_by_need() { shares.slices(&groups.concat()) } else { vec![] },
        };
        let w = &w.taking_turns(sides.iter().map(Vec::len).sum());
        let results = launch::run_interleaved(ctx, &sides, w, &format!("block{:02}", block + 1), &schedule, keep);
        out.extend(groups.into_iter().flatten().map(|i| (wi, i)).zip(results.into_iter().flatten()));
    }
    out
}

/// Calibrates workloads that need it (bignw's iterations per unit) with one pilot run on
/// the baseline, so every variant does the same work (the seed derived its iteration
/// counts once, too).
fn calibrate(
    ctx: &launch::Context,
    base: &Active,
    workloads: &[file::WorkloadConfig],
) -> Result<Vec<file::WorkloadConfig>> {
    let mut out = workloads.to_vec();
    for w in out.iter_mut().filter(|w| w.needs_calibration()) {
        let pilot = file::WorkloadConfig { repeat: Some(1), ..w.clone() };
        let record = launch::run(ctx, &base.cfg, &base.prepared, &pilot, "calibration", false)
            .and_then(|r| match &r.status {
                RunStatus::Completed => Ok(r),
                _ => bail!("{}", r.cause().unwrap_or("the run did not complete")),
            })
            .with_context(|| format!("calibrating {} on the baseline", w.label()))?;
        let found = record
            .calibration
            .with_context(|| format!("calibrating {}: the pilot run reported no calibration", w.label()))?;
        eprintln!("{}: calibrated ({found})", w.label());
        w.calibrate(&found)?;
        if interrupt::interrupted() {
            return Err(interrupt::Interrupted.into());
        }
    }
    Ok(out)
}

/// Stores a run and turns it into a report row plus its record.
fn record_run(
    store: &mut Store,
    at: Placement,
    w: &file::WorkloadConfig,
    result: Result<RunRecord>,
) -> Result<(RunRow, Option<RunRecord>)> {
    let (block, variant, label) = (at.block, at.variant.to_string(), w.label());
    match result {
        Ok(r) => {
            let run_id = store.add_run(Some(at), &r)?;
            Ok((row_of((run_id, block, &variant, &label), &r), Some(r)))
        }
        Err(e) => {
            let cause = format!("{e:#}");
            let run_id = store.add_failed_run(Some(at), &label, &cause)?;
            Ok((failed_row((run_id, block, &variant, &label), cause), None))
        }
    }
}

/// Where a run sits: its id in the store, block, variant and workload label.
type At<'a> = (i64, usize, &'a str, &'a str);

/// The report row of a run that produced a record.
fn row_of((run_id, block, variant, workload): At, r: &RunRecord) -> RunRow {
    RunRow {
        run_id,
        block,
        variant: variant.into(),
        workload: workload.into(),
        status: Status::from(&r.status),
        cause: r.cause().map(String::from),
        metric: r.measures.first().and_then(|m| r.measure(&m.name)),
        orders: (r.counts.units > 0).then_some(r.counts.units),
        rollback_rate: (r.counts.units > 0).then(|| r.counts.rollbacks as f64 / r.counts.units as f64),
        p95_ms: (r.unit_latency.count > 0).then_some(r.unit_latency.p95_ms),
        cpu_pct: Some(r.driver.process_cpu_pct).filter(|_| r.target.is_some()),
        system_cpu_pct: r.telemetry.as_ref().and_then(|t| t.window.as_ref()).map(|w| w.cpu_busy_pct),
    }
}

/// The report row of a run that failed without a record.
fn failed_row((run_id, block, variant, workload): At, cause: String) -> RunRow {
    RunRow {
        run_id,
        block,
        variant: variant.into(),
        workload: workload.into(),
        status: Status::Failed,
        cause: Some(cause),
        metric: None,
        orders: None,
        rollback_rate: None,
        p95_ms: None,
        cpu_pct: None,
        system_cpu_pct: None,
    }
}

fn leak_message(c: &CanaryResult) -> String {
    if c.encrypted {
        const NAMED: usize = 4;
        let mut files: Vec<String> =
            c.leaks.iter().take(NAMED).map(|(f, n)| format!("{} ({n})", f.display())).collect();
        if c.leaks.len() > NAMED {
            files.push(format!("{} more files", c.leaks.len() - NAMED));
        }
        format!(
            "variant '{}' is meant to be encrypted but {} plaintext canary hits were found at rest, in {}",
            c.variant,
            c.hits,
            files.join(", ")
        )
    } else {
        format!(
            "the canary scan found no plaintext in the plain variant '{}', so the scan cannot be trusted",
            c.variant
        )
    }
}

/// Fewest blocks whose interval widths a study stops on. A width from fewer is itself too
/// uncertain: stopping on the first narrow one picks the blocks whose spread happened to be
/// small, and their interval then misses more often than 5%. Simulated A/A studies (normal
/// per-block noise, a budget of 16 blocks, target reached early by luck) made 5.8-7.1% false
/// alarms when stopping from 6 blocks on, 5.0-5.9% from 10.
const FEWEST_TO_STOP_ON_WIDTH: usize = 10;

/// Whether `done` blocks (of at least `min`) are enough: every ratio at its target, but a
/// cost's that the `more` blocks left could not bring to its own
/// ([`summary::Width::out_of_reach`]). Such a ratio does not hold the study once some other
/// ratio reached its target, or it would hold every study to its whole budget; the names
/// of those left beyond their targets come back.
fn precise_enough(done: usize, min: usize, widths: &[summary::Width], more: usize) -> Option<Vec<String>> {
    let reached = |w: &summary::Width| w.half_width <= w.target;
    let beyond: Vec<&summary::Width> = widths.iter().filter(|w| !reached(w)).collect();
    let enough = done >= min.max(FEWEST_TO_STOP_ON_WIDTH)
        && widths.iter().any(reached)
        && beyond.iter().all(|w| w.out_of_reach(done, more));
    let said = |w: &&summary::Width| {
        let (hw, target, needs) = (100.0 * w.half_width, 100.0 * w.target, w.blocks_needed(done));
        format!("{} (+-{hw:.1}%, +-{target:.1}% would take {needs:.0} blocks)", w.name)
    };
    enough.then(|| beyond.iter().map(said).collect())
}

/// How many more blocks the study may run: what is left of its maximum, and of its budget
/// at the pace of its blocks so far.
fn blocks_left(max_more: usize, time_left: Duration, block_times: &[f64]) -> usize {
    let pace = next_block_time(block_times);
    match pace > 0.0 {
        true => max_more.min((time_left.as_secs_f64() / pace) as usize),
        false => max_more,
    }
}

/// What the next block will likely take: the mean of the blocks after the first, whose
/// time includes the canary scans and first connections that later blocks do not repeat.
fn next_block_time(block_times: &[f64]) -> f64 {
    let later = if block_times.len() > 1 { &block_times[1..] } else { block_times };
    later.iter().sum::<f64>() / later.len().max(1) as f64
}

/// `results/<study name>-<id>`, the name made one path component: `../` in it stays there.
fn default_out(name: &str, id: i64) -> PathBuf {
    PathBuf::from(format!("results/{}-{id}", slug(name)))
}

pub(crate) fn now() -> String {
    humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string()
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_study_name_is_one_component_of_its_output_directory() {
        let out = super::default_out("../../../tmp/x", 7);
        assert_eq!(out, std::path::Path::new("results/_________tmp_x-7"));
        assert_eq!(out.components().count(), 2, "{}", out.display());
    }

    #[test]
    fn the_next_block_is_expected_to_take_what_the_blocks_after_the_first_took() {
        assert_eq!(super::next_block_time(&[]), 0.0);
        assert_eq!(super::next_block_time(&[90.0]), 90.0);
        assert_eq!(super::next_block_time(&[90.0, 40.0, 60.0]), 50.0);
    }

    #[test]
    fn a_study_stops_on_width_only_from_ten_blocks_or_its_minimum_whichever_is_more() {
        let width = |half_width, target| super::summary::Width {
            name: String::new(),
            half_width,
            target,
            sides: (1, 0),
            noise_log: None,
            cost: false,
        };
        let narrow = [width(0.004, 0.01), width(0.009, 0.01)];
        let enough = |done, min, widths: &[_]| super::precise_enough(done, min, widths, 100).is_some();
        assert!(!enough(9, 6, &narrow));
        assert!(enough(10, 6, &narrow));
        assert!(!enough(10, 6, &[width(0.004, 0.01), width(0.011, 0.01)]));
        assert!(!enough(10, 6, &[width(0.004, 0.003), width(0.009, 0.01)]), "each its own target");
        assert!(!enough(10, 6, &[]));
        assert!(!enough(11, 12, &narrow));
        assert!(enough(12, 12, &narrow));
    }

    #[test]
    fn a_cost_the_budget_cannot_bring_to_its_target_does_not_hold_the_study() {
        let width = |name: &str, half_width, cost| super::summary::Width {
            name: name.into(),
            half_width,
            target: 0.005,
            sides: (1, 0),
            noise_log: None,
            cost,
        };
        let tps = width("TPS", 0.004, false);
        // +-4.5% after 20 blocks needs 20 * 9^2 = 1,620 blocks; 180 are left.
        let written = width("storage KB written per unit", 0.045, true);
        let stop = super::precise_enough(20, 6, &[tps.clone(), written.clone()], 180);
        let said = "storage KB written per unit (+-4.5%, +-0.5% would take 1620 blocks)";
        assert_eq!(stop, Some(vec![said.to_string()]));
        // +-0.6% after 20 blocks needs 29: within reach, so the study goes on.
        let cpu = width("server CPU per unit", 0.006, true);
        assert_eq!(super::precise_enough(20, 6, &[tps.clone(), cpu], 180), None);
        // The workload's own measure holds the study to its budget, and so does a cost when
        // nothing reached its target.
        assert_eq!(super::precise_enough(20, 6, &[width("TPS", 0.045, false), width("c", 0.004, true)], 180), None);
        assert_eq!(super::precise_enough(20, 6, &[written], 180), None);
        assert_eq!(super::precise_enough(20, 6, &[tps], 180), Some(vec![]));
        assert_eq!(super::blocks_left(190, std::time::Duration::from_secs(100), &[30.0, 9.0, 11.0]), 10);
        assert_eq!(super::blocks_left(3, std::time::Duration::from_secs(100), &[30.0, 9.0, 11.0]), 3);
    }

    /// Simulated studies of a change of twice the verdict's threshold (2%, per-block noise
    /// of 1.2%, what the in-cache checks measure), each stopping as a study does: from ten
    /// blocks on, once its interval reaches the target. At the default target (half the
    /// threshold) nearly all call it, even as the first step of a family of four measures
    /// (its p times four); at a target as wide as the threshold, far fewer do.
    #[test]
    fn the_default_target_calls_a_change_of_twice_the_threshold_nineteen_times_in_twenty() {
        use rand::{Rng, SeedableRng};
        let text = "name = \"t\"\n[workload]\nname = \"ds2\"\n[[variants]]\nname = \"a\"\n[[variants]]\nname = \"b\"\n";
        let study = super::StudyFile::parse("t.toml", text).unwrap();
        let rules = study.verdict;
        let called = |target: f64| {
            let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
            let mut normal = move || {
                let (u, v): (f64, f64) = (rng.random_range(f64::EPSILON..1.0), rng.random());
                (-2.0 * u.ln()).sqrt() * (std::f64::consts::TAU * v).cos()
            };
            let studies = 200;
            let slower = (0..studies).filter(|_| {
                let mut variant = vec![];
                let est = loop {
                    variant.push((0.012 * normal()).exp() / 1.02);
                    if variant.len() < super::FEWEST_TO_STOP_ON_WIDTH {
                        continue;
                    }
                    let mut est =
                        crate::stats::paired_ratio(&vec![1.0; variant.len()], &variant, 1, rules.confidence, 4);
                    if est.relative_half_width() <= target || variant.len() == study.blocks.max {
                        est.p_adjusted = Some((4.0 * est.p_value).min(1.0));
                        break est;
                    }
                };
                matches!(crate::stats::verdict(&est, true, &rules), crate::stats::Verdict::Slower { .. })
            });
            slower.count() as f64 / studies as f64
        };
        let (at_default, at_threshold) = (called(study.ci_target()), called(rules.threshold));
        assert!(at_default >= 0.95 && at_threshold < 0.8, "called at +-0.5%: {at_default}; at +-1%: {at_threshold}");
    }
}
