//! The plaintext canary scan: every build writes a known marker into its data, and after a
//! run dbvs searches the variant's bytes at rest for it. Plain storage must show hits (which
//! proves the scan can see plaintext); encrypted storage must show none.

use anyhow::{Context, Result};
use std::io::Read;
use std::path::{Path, PathBuf};

/// Counts occurrences of `marker` in every file under `paths` (recursively).
pub fn scan(paths: &[PathBuf], marker: &[u8]) -> Result<(u64, u64)> {
    let (mut hits, mut bytes) = (0, 0);
    for p in paths {
        scan_path(p, marker, &mut hits, &mut bytes)?;
    }
    Ok((hits, bytes))
}

fn scan_path(path: &Path, marker: &[u8], hits: &mut u64, bytes: &mut u64) -> Result<()> {
    let meta = std::fs::symlink_metadata(path).with_context(|| format!("cannot scan {}", path.display()))?;
    if meta.is_dir() {
        for entry in std::fs::read_dir(path)? {
            scan_path(&entry?.path(), marker, hits, bytes)?;
        }
    } else if meta.is_file() {
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
            *bytes += n as u64;
            let end = filled + n;
            *hits += buf[..end].windows(marker.len()).filter(|w| *w == marker).count() as u64;
            let tail = end.saturating_sub(keep);
            buf.copy_within(tail..end, 0);
            filled = end - tail;
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
        let (hits, bytes) = scan(&[dir.path().to_path_buf()], b"CANARY").unwrap();
        assert_eq!(hits, 2);
        assert_eq!(bytes, data.len() as u64 + 9);
    }
}
