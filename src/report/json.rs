//! JSON: the report model as is, for tools.

use super::StudyReport;
use anyhow::Result;

pub fn render(r: &StudyReport) -> Result<String> {
    Ok(serde_json::to_string_pretty(r)? + "\n")
}
