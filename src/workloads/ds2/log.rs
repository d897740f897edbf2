//! DS2-format log lines, spelled exactly like the DS2.1 driver's, so existing DS2 log
//! parsers keep working on dbvs output. Milliseconds and OPM are whole numbers there.

use super::{per_minute, BROWSE, LOGIN, NEW_CUSTOMER, PURCHASE};
use crate::driver::{IntervalSample, RunResult};

pub fn interval_line(s: &IntervalSample) -> String {
    format!(
        "et={:7.1} n_overall={} opm={} rt_tot_lastn_max_msec={:.0} rt_tot_avg_msec={:.0} rt_tot_sampled={:.0} rollbacks: n={} %={:5.1}",
        s.et_s, s.units, s.per_min as u64, s.lastn_max_ms, s.avg_ms, s.sampled_ms, s.rollbacks, s.rollback_pct
    )
}

pub fn final_line(run: &RunResult) -> String {
    let m = &run.measured;
    let last = run.intervals.last();
    let op = |i: usize| &m.op_latency[i].1;
    let rate = if m.units > 0 { 100.0 * m.rollbacks as f64 / m.units as f64 } else { 0.0 };
    format!(
        "Final ({}): et={:.1} n_overall={} opm={} rt_tot_lastn_max={:.0} rt_tot_avg={:.0} n_login_overall={} \
         n_newcust_overall={} n_browse_overall={} n_purchase_overall={} rt_login_avg_msec={:.0} \
         rt_newcust_avg_msec={:.0} rt_browse_avg_msec={:.0} rt_purchase_avg_msec={:.0} rt_tot_sampled={:.0} \
         n_rollbacks_overall={} rollback_rate = {:5.1}%",
        humantime::format_rfc3339_seconds(std::time::SystemTime::now()),
        run.elapsed_s,
        m.units,
        per_minute(m.units, run.elapsed_s) as u64,
        last.map_or(0.0, |s| s.lastn_max_ms),
        m.unit_latency.avg_ms,
        op(LOGIN).count,
        op(NEW_CUSTOMER).count,
        op(BROWSE).count,
        op(PURCHASE).count,
        op(LOGIN).avg_ms,
        op(NEW_CUSTOMER).avg_ms,
        op(BROWSE).avg_ms,
        op(PURCHASE).avg_ms,
        last.map_or(0.0, |s| s.sampled_ms),
        m.rollbacks,
        rate
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interval_line_has_the_ds2_spelling() {
        let s = IntervalSample {
            et_s: 10.04,
            units: 1234,
            per_min: 7374.9,
            interval_per_min: 0.0,
            lastn_max_ms: 41.6,
            avg_ms: 6.2,
            sampled_ms: 5.9,
            rollbacks: 25,
            rollback_pct: 2.026,
            p50_ms: 5.0,
            p95_ms: 12.0,
            p99_ms: 30.0,
        };
        assert_eq!(
            interval_line(&s),
            "et=   10.0 n_overall=1234 opm=7374 rt_tot_lastn_max_msec=42 rt_tot_avg_msec=6 rt_tot_sampled=6 rollbacks: n=25 %=  2.0"
        );
    }
}
