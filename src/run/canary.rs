//! The plaintext canary scan: every build writes a known marker into its data, and after a
//! run dbvs searches the variant's bytes at rest for it. Plain storage must show hits (which
//! proves the scan can see plaintext); encrypted storage must show none.

use anyhow::{Context, Result};
use std::io::Read;
use std::path::{Path, PathBuf};

/// What a scan found: the marker's occurrences, the bytes read, and the files that held it.
#[derive(Debug, Default, PartialEq)]
pub struct Found {
    pub hits: u64,
    pub bytes: u64,
    /// Each file with hits and how many, in the order scanned.
    pub files: Vec<(PathBuf, u64)>,
}

/// Counts occurrences of `marker` in every file under `paths` (recursively).
pub fn scan(paths: &[PathBuf], marker: &[u8]) -> Result<Found> {
    let mut found = Found::default();
    for p in paths {
        scan_path(p, marker, &mut found)?;
    }
    Ok(found)
}

fn scan_path(path: &Path, marker: &[u8], found: &mut Found) -> Result<()> {
    let meta = std::fs::symlink_metadata(path).with_context(|| format!("cannot scan {}", path.display()))?;
    if meta.is_dir() {
        let mut entries = std::fs::read_dir(path)?.map(|e| e.map(|e| e.path())).collect::<Result<Vec<_>, _>>()?;
        entries.sort();
        for entry in entries {
            scan_path(&entry, marker, found)?;
        }
    } else if meta.is_file() {
        let mut hits = 0;
        let mut f = std::fs::File::open(path)?;
        let mut buf = vec![0u8; 1 << 20];
        // Keep the last marker-1 bytes so a marker split across reads is still found.
        let keep = marker.len() - 1;
        let mut filled = 0;
        loop {
            let n = f.read(&mut buf[filled..])?;
            if n == 0 {
                break;
            }
            found.bytes += n as u64;
            let end = filled + n;
            hits += buf[..end].windows(marker.len()).filter(|w| *w == marker).count() as u64;
            let tail = end.saturating_sub(keep);
            buf.copy_within(tail..end, 0);
            filled = end - tail;
        }
        if hits > 0 {
            found.hits += hits;
            found.files.push((path.to_path_buf(), hits));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_markers_across_read_boundaries_and_in_subdirectories() {
        let dir = tempfile::tempdir().unwrap();
        let mut data = vec![b'x'; (1 << 20) - 3];
        data.extend_from_slice(b"CANARY");
        data.extend_from_slice(b"..CANARY..");
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        std::fs::write(dir.path().join("sub/f"), &data).unwrap();
        std::fs::write(dir.path().join("g"), b"no marker").unwrap();
        let found = scan(&[dir.path().to_path_buf()], b"CANARY").unwrap();
        assert_eq!(found.hits, 2);
        assert_eq!(found.bytes, data.len() as u64 + 9);
        assert_eq!(found.files, vec![(dir.path().join("sub/f"), 2)]);
    }
}
