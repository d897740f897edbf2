//! How a study measures each workload's variants: taking turns in short slices inside one
//! run per block (interleaved, the default wherever it applies), or each alone, and why.
//! The study file's `interleave` key only overrides the default.

use super::file::{StudyFile, WorkloadConfig};
use crate::report::Design;
use crate::run::config::Disk;
use crate::variants::{BackgroundWork, VariantConfig};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::time::Duration;

/// The slice in cache: the main job's per-block noise fell as slices shortened from 250 to
/// 50 to 10 ms (docs/methodology.md, "Interleaved slices").
pub const IN_CACHE_SLICE: Duration = Duration::from_millis(10);
/// The slice when a run's memory is limited: the larger-than-memory study's, where a turn's
/// first units wait on storage reads. Whether 10 ms does better there is not yet measured.
pub const LIMITED_MEMORY_SLICE: Duration = Duration::from_millis(50);
pub const SHORTEST: Duration = Duration::from_millis(10);
pub const LONGEST: Duration = Duration::from_secs(600);

/// The study file's `interleave`: a slice length, or `"off"` (each variant alone per block).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Interleave {
    Off,
    Every(Duration),
}

impl Serialize for Interleave {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Interleave::Off => s.serialize_str("off"),
            Interleave::Every(d) => crate::sys::units::duration_text::serialize(d, s),
        }
    }
}

impl std::str::FromStr for Interleave {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        let or_off = "or \"off\" to run each variant alone in each block";
        if text == "off" {
            return Ok(Interleave::Off);
        }
        match crate::sys::units::parse_duration(text) {
            Ok(slice) if (SHORTEST..=LONGEST).contains(&slice) => Ok(Interleave::Every(slice)),
            Ok(_) => Err(format!("a slice is from 10ms to 10m, e.g. \"100ms\"; {or_off}")),
            Err(e) => Err(format!("{e}; {or_off}")),
        }
    }
}

impl<'de> Deserialize<'de> for Interleave {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d)?.parse().map_err(serde::de::Error::custom)
    }
}

impl StudyFile {
    /// How the variants of `w` are measured in each block.
    pub fn design(&self, w: &WorkloadConfig) -> Design {
        let alone = |why: String| Design {
            workload: w.label(),
            slice: None,
            alone_because: Some(why),
            variants_alone: vec![],
            own_processes_because: None,
            background: vec![],
            disk: self.disk_note(w),
            few_turns: None,
        };
        if let Some(why) = w.why_alone() {
            return alone(why);
        }
        if self.clients.is_some() {
            return alone(
                "[clients] runs the workers on other hosts, and variants take turns inside one process here".into(),
            );
        }
        let slice = match self.interleave {
            Some(Interleave::Off) => {
                return alone("interleave = \"off\" (the study file, or dbvs study --interleave off)".into())
            }
            Some(Interleave::Every(slice)) => slice,
            None if w.memory.is_some() => LIMITED_MEMORY_SLICE,
            None => IN_CACHE_SLICE,
        };
        let named = self.interleave.is_some();
        let reasons: Vec<(&str, String)> =
            self.variants.iter().filter_map(|v| Some((v.name.as_str(), alone_in(v, w, named)?))).collect();
        let taking_turns = self.variants.len() - reasons.len();
        let variants_alone = alone_by_reason(&reasons);
        if taking_turns < 2 {
            return alone(format!("fewer than two variants can take turns ({})", variants_alone.join("; ")));
        }
        let own_processes_because = w.a_process_per_variant().then(|| {
            "under the memory limit each has the whole limit and keeps its own cache between its turns, as alone"
                .to_string()
        });
        let background = self
            .variants
            .iter()
            .filter(|v| alone_in(v, w, named).is_none())
            .filter_map(|v| Some(format!("{} ({})", v.name, v.background_work()?)))
            .collect();
        Design {
            workload: w.label(),
            slice: Some(slice),
            alone_because: None,
            variants_alone,
            own_processes_because,
            background,
            disk: self.disk_note(w),
            few_turns: few_turns(slice, taking_turns, w),
        }
    }

    /// Under a memory limit, what the runs read from storage: a RAM disk model, or the
    /// host's disk, whose readahead and bursts make the bytes read per unit vary by run
    /// (docs/methodology.md, "The disk under a memory limit").
    fn disk_note(&self, w: &WorkloadConfig) -> Option<String> {
        w.memory.as_ref()?;
        Some(match self.target.disk {
            Disk::Ram { .. } => "reads from storage come from a RAM disk model ([target] disk = \"ram\")".into(),
            Disk::Host => "reads from storage come from the host's disk, whose readahead and bursts make the \
                           bytes read per unit vary by run; [target] disk = \"ram\" reads from a disk model that \
                           does not"
                .into(),
        })
    }
}

/// `names, alone: why` for each reason some variants run alone, the variants that share it
/// named together in the study's order.
fn alone_by_reason(reasons: &[(&str, String)]) -> Vec<String> {
    let mut grouped: Vec<(Vec<&str>, &str)> = Vec::new();
    for (name, why) in reasons {
        match grouped.iter_mut().find(|(_, w)| w == why) {
            Some((names, _)) => names.push(name),
            None => grouped.push((vec![name], why)),
        }
    }
    grouped.into_iter().map(|(names, why)| format!("{}, alone: {why}", names.join(" and "))).collect()
}

/// Fewer turns per variant in a run's measured window than this leave much of the machine's
/// noise in each block: the main job (six stacks sharing one 5 s window, as then) had a
/// per-block noise of 2-3% with 10 ms slices (about 80 turns each) and of 27-118% with
/// 200 ms slices (about 4).
const FEW_TURNS: u128 = 10;

/// What the design says when `slice` gives each of `sides` variants fewer than
/// [`FEW_TURNS`] turns in its share of the run: `w`'s measured window, as alone
/// (`WorkloadConfig::taking_turns`).
fn few_turns(slice: Duration, sides: usize, w: &WorkloadConfig) -> Option<String> {
    let window = w.load.window();
    let turns = window.as_nanos() / slice.as_nanos().max(1);
    (sides > 1 && turns < FEW_TURNS).then(|| {
        format!(
            "each variant gets only about {turns} turns of {} in its {} of work, too few for the slices to share \
             the machine's bursts: a shorter interleave or a longer duration gives more",
            humantime::format_duration(slice),
            humantime::format_duration(window)
        )
    })
}

/// Why variant `v` runs alone in each block though `w`'s variants take turns: limits that
/// are rates, a process of its own where processes cannot take turns, or a FUSE daemon
/// where the study did not name its slice (`slice_named`).
pub fn alone_in(v: &VariantConfig, w: &WorkloadConfig, slice_named: bool) -> Option<String> {
    if let Some(why) = v.why_alone() {
        return Some(why.into());
    }
    let own_process = !v.aesni || v.limits.is_some();
    if own_process && !w.turns_across_processes() {
        return Some("it needs a process of its own, and after dropped caches processes cannot take turns".into());
    }
    (v.background_work() == Some(BackgroundWork::FuseDaemon) && !slice_named).then(|| {
        "its FUSE daemon does part of its work outside its threads, and taking turns moved its ratios away from \
         each variant alone (docs/methodology.md, \"Interleaved against alone\"); a slice named in `interleave` \
         makes it take turns"
            .into()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn designs(text: &str) -> Vec<Design> {
        let study = StudyFile::parse("t.toml", text).unwrap();
        study.workloads.iter().map(|w| study.design(w)).collect()
    }

    #[test]
    fn under_a_memory_limit_the_design_says_what_the_runs_read_from() {
        let study = |target: &str| {
            designs(&format!(
                "name = \"t\"\n{target}[[workloads]]\nname = \"ds2\"\n[[workloads]]\nname = \"tpcb\"\nmemory = \"64MB\"\n{VARIANTS}"
            ))
        };
        let host = study("");
        assert_eq!(host[0].disk, None, "in cache, nothing is read from storage");
        assert!(host[1].text().contains("the host's disk, whose readahead and bursts make the bytes read per unit vary by run; [target] disk = \"ram\""), "{}", host[1].text());
        let ram = study("[target]\ndisk = \"ram\"\n");
        assert!(
            ram[1].text().ends_with("reads from storage come from a RAM disk model ([target] disk = \"ram\")"),
            "{}",
            ram[1].text()
        );
    }

    const VARIANTS: &str =
        "[[variants]]\nname = \"a\"\nkind = \"plain\"\n[[variants]]\nname = \"b\"\nkind = \"plain\"\n";

    #[test]
    fn a_study_that_names_no_design_gets_interleaved_slices_by_its_regime() {
        let d = designs(&format!("name = \"t\"\n[[workloads]]\nname = \"ds2\"\n[[workloads]]\nname = \"tpcb\"\nmemory = \"64MB\"\n{VARIANTS}"));
        assert_eq!(d.iter().map(|d| d.slice).collect::<Vec<_>>(), [Some(IN_CACHE_SLICE), Some(LIMITED_MEMORY_SLICE)]);
        assert!(d.iter().all(|d| d.alone_because.is_none()));
        assert_eq!(d.iter().map(|d| d.own_processes_because.is_some()).collect::<Vec<_>>(), [false, true]);
        assert!(
            d[1].text().contains("each variant from a run process of its own (under the memory limit"),
            "{}",
            d[1].text()
        );
        let d = designs(&format!("name = \"t\"\ninterleave = \"200ms\"\n[workload]\nname = \"ds2\"\n{VARIANTS}"));
        assert_eq!(d[0].slice, Some(Duration::from_millis(200)));
    }

    #[test]
    fn a_variant_whose_limits_are_rates_runs_alone_while_the_others_take_turns() {
        let one = "name = \"t\"\n[workload]\nname = \"ds2\"\n[[variants]]\nname = \"a\"\nkind = \"plain\"\n";
        let head = format!("{one}[[variants]]\nname = \"a2\"\nkind = \"plain\"\n");
        let limited = |head: &str, variant: &str| {
            designs(&format!("{head}[[variants]]\nname = \"b\"\nkind = \"limits\"\n{variant}\n")).remove(0)
        };
        let with = |variant: &str| limited(&head, variant);
        let quota = with("cpus = 0.5");
        assert_eq!(quota.slice, Some(IN_CACHE_SLICE));
        assert_eq!(quota.variants_alone.len(), 1, "{quota:?}");
        assert!(quota.variants_alone[0].starts_with("b, alone: its CPU quota"), "{quota:?}");
        assert!(with("read_iops = 200").variants_alone[0].contains("I/O caps"));
        // A memory cap or a core set holds whatever the waiting: that variant takes turns.
        assert!(with("memory = \"1GB\"\ncpuset = \"0\"").variants_alone.is_empty());
        // With one variant left to take turns, every variant runs alone, and says why.
        let pair = limited(one, "cpus = 0.5");
        assert_eq!(pair.slice, None);
        let why = pair.alone_because.unwrap_or_default();
        assert!(why.starts_with("fewer than two variants can take turns (b, alone: its CPU quota"), "{why}");
    }

    #[test]
    fn a_workload_that_cannot_take_turns_runs_alone_and_says_why() {
        let why = |entry: &str| {
            let d = designs(&format!("name = \"t\"\n[workload]\n{entry}\n{VARIANTS}")).remove(0);
            assert_eq!(d.slice, None);
            d.alone_because.unwrap()
        };
        assert!(why("name = \"tpcc\"\niterations = 10").contains("fixed amount of work"));
        assert!(why("name = \"ds2\"\ninstances = 2").contains("instances"));
        assert!(why("name = \"batch\"").contains("timed throughput"));
        assert!(why("name = \"ds2\"\nmemory = \"64MB\"\ncold = true").contains("after dropped caches (cold)"));
        let off = designs(&format!("name = \"t\"\ninterleave = \"off\"\n[workload]\nname = \"ds2\"\n{VARIANTS}"));
        assert!(off[0].alone_because.as_ref().unwrap().contains("interleave = \"off\""));
    }

    #[test]
    fn variants_that_work_in_the_background_are_named_with_the_check() {
        let variants = "[[variants]]\nname = \"a\"\nkind = \"plain\"\n[[variants]]\nname = \"g\"\nkind = \"gocryptfs\"\n\
                        [[variants]]\nname = \"img\"\nstorage = \"ext4-image\"\n[[variants]]\nname = \"s\"\nkind = \"sqlcipher\"\n";
        let named = designs(&format!("name = \"t\"\ninterleave = \"10ms\"\n[workload]\nname = \"ds2\"\n{variants}"));
        // gocryptfs's control (the study adds it) has a FUSE daemon too.
        assert_eq!(
            named[0].background,
            ["g (a FUSE daemon)", "img (a loop device)", "plain through FUSE (a FUSE daemon)"]
        );
        assert!(named[0].variants_alone.is_empty());
        let d = designs(&format!("name = \"t\"\n[workload]\nname = \"ds2\"\n{variants}")).remove(0);
        assert_eq!(d.background, ["img (a loop device)"]);
        assert!(d.text().contains("--validate checks their ratios"), "{}", d.text());
        let off = designs(&format!("name = \"t\"\ninterleave = \"off\"\n[workload]\nname = \"ds2\"\n{variants}"));
        assert!(off[0].background.is_empty() && !off[0].text().contains("background"));
        assert!(designs(&format!("name = \"t\"\n[workload]\nname = \"ds2\"\n{VARIANTS}"))[0].background.is_empty());
    }

    #[test]
    fn by_default_variants_with_a_fuse_daemon_run_alone_and_say_why() {
        let variants =
            "[[variants]]\nname = \"a\"\nkind = \"plain\"\n[[variants]]\nname = \"g\"\nkind = \"gocryptfs\"\n\
                        [[variants]]\nname = \"s\"\nkind = \"sqlcipher\"\n";
        let d = designs(&format!("name = \"t\"\n[workload]\nname = \"ds2\"\n{variants}")).remove(0);
        assert_eq!(d.slice, Some(IN_CACHE_SLICE), "the others still take turns");
        // One reason, said once for both.
        assert_eq!(d.variants_alone.len(), 1, "{:?}", d.variants_alone);
        let text = d.text();
        assert!(
            text.contains("but for g and plain through FUSE, alone: its FUSE daemon does part of its work outside"),
            "{text}"
        );
        assert!(text.contains("a slice named in `interleave`"), "{text}");
    }

    #[test]
    fn slices_too_long_for_the_run_say_how_few_turns_each_variant_gets() {
        let design = |interleave: &str| {
            designs(&format!(
                "name = \"t\"\ninterleave = \"{interleave}\"\n[workload]\nname = \"ds2\"\nduration = \"5s\"\n{VARIANTS}"
            ))
            .remove(0)
        };
        assert_eq!(design("10ms").few_turns, None, "500 turns each");
        assert_eq!(design("500ms").few_turns, None, "10 turns each: its 5 s of work, whatever the variants");
        let long = design("1s");
        let said = long.few_turns.as_deref().unwrap_or_default();
        assert!(said.starts_with("each variant gets only about 5 turns of 1s in its 5s of work"), "{said}");
        assert!(long.text().contains(said), "{}", long.text());
    }

    #[test]
    fn a_bad_interleave_names_the_way_to_turn_it_off() {
        let e = StudyFile::parse(
            "t.toml",
            &format!("name = \"t\"\ninterleave = \"never\"\n[workload]\nname = \"ds2\"\n{VARIANTS}"),
        );
        assert!(format!("{:#}", e.unwrap_err()).contains("\"off\""));
        let e = StudyFile::parse(
            "t.toml",
            &format!("name = \"t\"\ninterleave = \"5ms\"\n[workload]\nname = \"ds2\"\n{VARIANTS}"),
        );
        assert!(format!("{:#}", e.unwrap_err()).contains("from 10ms to 10m"));
        assert_eq!("off".parse(), Ok(Interleave::Off));
        assert_eq!("50ms".parse(), Ok(Interleave::Every(Duration::from_millis(50))));
    }
}
