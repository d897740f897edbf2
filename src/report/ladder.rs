//! An upgrade ladder's table (`ladder = true`): each step, what it changes from the step
//! before, and its change against the step before and against the first, per measure.

use super::tables::{change, verdict_cell, Table};
use super::{Comparison, StudyReport};

/// One row per measure and step after the first; empty unless the study is a ladder.
pub fn table(r: &StudyReport) -> Table {
    let mut rows = vec![];
    for m in &r.measures {
        let mut before = r.baseline.as_str();
        for (step, changes) in &r.ladder {
            let first = m.comparisons.iter().find(|c| c.variant == *step);
            // The first step after the baseline is compared with it once, as both.
            let previous = match before == r.baseline {
                true => first,
                false => m.pairs.iter().find(|c| c.variant == *step && c.against.as_deref() == Some(before)),
            };
            let cell = |c: Option<&Comparison>| {
                c.map_or("-".into(), |c| format!("{} {}", change(&c.estimate), verdict_cell(c)))
            };
            rows.push(vec![
                m.measure.workload.clone(),
                m.measure.name.clone(),
                step.clone(),
                changes.join("; "),
                cell(previous),
                cell(first),
            ]);
            before = step;
        }
    }
    let header =
        ["workload", "measure", "step", "changes from the step before", "vs the step before", "vs the first step"];
    Table {
        title: format!("Upgrade ladder from {} (change [95% CI] and verdict)", r.baseline),
        header: header.map(String::from).to_vec(),
        rows,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_step_stands_against_the_one_before_and_the_first() {
        let mut r = crate::report::sample::report();
        let m = &mut r.measures[0];
        let mut second = m.comparisons[0].clone();
        second.variant = "two".into();
        let mut pair = second.clone();
        pair.against = Some(m.comparisons[0].variant.clone());
        m.comparisons.push(second);
        m.pairs.push(pair);
        let one = m.comparisons[0].variant.clone();
        r.ladder = vec![(one.clone(), vec!["storage: tmpfs".into()]), ("two".into(), vec!["limits: none".into()])];
        let t = table(&r);
        assert_eq!(t.rows.len(), 2 * r.measures.len());
        assert_eq!((t.rows[0][2].as_str(), t.rows[0][3].as_str()), (one.as_str(), "storage: tmpfs"));
        assert_eq!(t.rows[0][4], t.rows[0][5], "the first step's previous is the first");
        assert_eq!(t.rows[1][2], "two");
        assert!(t.rows[1].iter().skip(4).all(|c| c != "-"), "{:?}", t.rows[1]);
    }
}
