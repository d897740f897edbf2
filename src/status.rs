//! How a study, a stored run or a study's variant ended: enums, spelled in the store,
//! records and reports as their lowercase names.

use serde::{Deserialize, Serialize};

/// A study's or a stored run's state.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Running,
    Completed,
    Interrupted,
    Failed,
    /// Its process died (the next dbvs command found it running with no owner).
    Aborted,
}

/// What a study did with a variant.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum VariantStatus {
    Ran,
    /// The host cannot set it up (a missing tool or kernel feature).
    Skipped,
    /// One of its runs failed, so it is not compared.
    Failed,
}

impl Status {
    pub fn name(self) -> &'static str {
        match self {
            Status::Running => "running",
            Status::Completed => "completed",
            Status::Interrupted => "interrupted",
            Status::Failed => "failed",
            Status::Aborted => "aborted",
        }
    }

    fn parse(s: &str) -> Option<Self> {
        [Status::Running, Status::Completed, Status::Interrupted, Status::Failed, Status::Aborted]
            .into_iter()
            .find(|x| x.name() == s)
    }
}

impl VariantStatus {
    pub fn name(self) -> &'static str {
        match self {
            VariantStatus::Ran => "ran",
            VariantStatus::Skipped => "skipped",
            VariantStatus::Failed => "failed",
        }
    }
}

impl std::fmt::Display for Status {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::fmt::Display for VariantStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl From<&crate::driver::RunStatus> for Status {
    fn from(s: &crate::driver::RunStatus) -> Self {
        match s {
            crate::driver::RunStatus::Completed => Status::Completed,
            crate::driver::RunStatus::Interrupted => Status::Interrupted,
            crate::driver::RunStatus::Failed(_) => Status::Failed,
        }
    }
}

impl rusqlite::ToSql for Status {
    fn to_sql(&self) -> rusqlite::Result<rusqlite::types::ToSqlOutput<'_>> {
        Ok(self.name().into())
    }
}

impl rusqlite::types::FromSql for Status {
    fn column_result(v: rusqlite::types::ValueRef<'_>) -> rusqlite::types::FromSqlResult<Self> {
        let s = v.as_str()?;
        Status::parse(s).ok_or_else(|| rusqlite::types::FromSqlError::Other(format!("unknown status '{s}'").into()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_round_trip_through_their_names() {
        for s in [Status::Running, Status::Completed, Status::Interrupted, Status::Failed, Status::Aborted] {
            assert_eq!(Status::parse(s.name()), Some(s));
            assert_eq!(serde_json::to_string(&s).unwrap(), format!("\"{s}\""));
        }
        assert_eq!(Status::parse("ran"), None);
        assert_eq!(serde_json::to_string(&VariantStatus::Skipped).unwrap(), "\"skipped\"");
    }
}
