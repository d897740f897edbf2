//! `dbvs cipher`: in-memory AES throughput by buffer size, the table TrueCrypt's benchmark
//! gave seed 000 (encryption, decryption and mean MB/s, AES-NI on versus off).
//!
//! Everything goes through OpenSSL's EVP interface, the library SQLCipher uses here, so
//! the figures say what the CPU can do for the encryptors dbvs measures. AES-256-XTS is
//! run as disk encryption runs it: 4096-byte data units, each with its number as tweak.
//! GCM and CBC process each thread's share of the buffer as one message. A buffer is
//! encrypted and decrypted whole, as many times as fit in [`MIN_TIME`]; the median of the
//! runs is reported. MB is 10^6 bytes, as `openssl speed` counts.

pub mod table;

use crate::measure::Measure;
use anyhow::{bail, Context, Result};
use openssl::cipher::{Cipher, CipherRef};
use openssl::cipher_ctx::CipherCtx;
use serde::Serialize;
use std::time::{Duration, Instant};

/// OpenSSL capability mask that hides AES-NI, PCLMULQDQ, VAES and VPCLMULQDQ (research
/// encryption.md section 5), so OpenSSL falls back to its software AES.
pub const OPENSSL_NO_AESNI: &str = "~0x200000200000000:~0x60000000000";

/// Whether this process's OpenSSL was started with AES-NI masked.
pub fn masked() -> bool {
    std::env::var("OPENSSL_ia32cap").is_ok_and(|v| v == OPENSSL_NO_AESNI)
}

/// Each measurement repeats the buffer until it has run at least this long.
pub const MIN_TIME: Duration = Duration::from_millis(200);
/// XTS data unit, as fscrypt and dm-crypt use.
const SECTOR: usize = 4096;

/// TrueCrypt's buffer sizes.
pub const SIZES: &[(&str, usize)] = &[
    ("100 KB", 100 << 10),
    ("500 KB", 500 << 10),
    ("1 MB", 1 << 20),
    ("5 MB", 5 << 20),
    ("10 MB", 10 << 20),
    ("50 MB", 50 << 20),
    ("100 MB", 100 << 20),
    ("200 MB", 200 << 20),
    ("500 MB", 500 << 20),
    ("1 GB", 1 << 30),
];

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, serde::Deserialize, clap::ValueEnum)]
pub enum Algo {
    #[default]
    #[value(name = "aes-256-xts")]
    #[serde(rename = "aes-256-xts")]
    Xts,
    #[value(name = "aes-256-gcm")]
    #[serde(rename = "aes-256-gcm")]
    Gcm,
    #[value(name = "aes-256-cbc")]
    #[serde(rename = "aes-256-cbc")]
    Cbc,
}

impl Algo {
    pub fn name(self) -> &'static str {
        match self {
            Algo::Xts => "aes-256-xts",
            Algo::Gcm => "aes-256-gcm",
            Algo::Cbc => "aes-256-cbc",
        }
    }

    fn cipher(self) -> &'static CipherRef {
        match self {
            Algo::Xts => Cipher::aes_256_xts(),
            Algo::Gcm => Cipher::aes_256_gcm(),
            Algo::Cbc => Cipher::aes_256_cbc(),
        }
    }
}

/// One buffer size's result.
#[derive(Clone, Debug, Serialize, serde::Deserialize)]
pub struct Point {
    pub label: String,
    pub bytes: usize,
    pub encrypt_mbs: f64,
    pub decrypt_mbs: f64,
    /// (encrypt + decrypt) / 2, TrueCrypt's "Mean".
    pub mean_mbs: f64,
    /// Each run's encrypt and decrypt MB/s, in order (the figures above are their medians).
    #[serde(default)]
    pub runs: Vec<[f64; 2]>,
}

/// One cipher at one AES-NI setting over the buffer sizes.
#[derive(Clone, Debug, Serialize, serde::Deserialize)]
pub struct Series {
    pub cipher: String,
    pub aesni: bool,
    pub threads: usize,
    pub points: Vec<Point>,
}

/// Parses a buffer size name from [`SIZES`] (e.g. `100KB`, `1GB`).
pub fn parse_size(s: &str) -> Result<(&'static str, usize)> {
    let want = s.replace(' ', "").to_ascii_uppercase();
    SIZES.iter().find(|(l, _)| l.replace(' ', "") == want).copied().with_context(|| {
        let all: Vec<String> = SIZES.iter().map(|(l, _)| l.replace(' ', "")).collect();
        format!("unknown buffer size '{s}': use some of {}", all.join(", "))
    })
}

/// The first series' mean MB/s over its sizes: what a study compares.
pub fn throughput(series: &[Series]) -> Measure {
    Measure::higher("mean MB/s", "MB/s", series.first().map(|s| average(s, |p| p.mean_mbs)))
}

/// A statistic of a series' points, averaged over its buffer sizes.
pub fn average(s: &Series, f: fn(&Point) -> f64) -> f64 {
    s.points.iter().map(f).sum::<f64>() / s.points.len().max(1) as f64
}

/// The first series' encrypt, decrypt and mean MB/s, averaged over its sizes.
pub fn metrics(series: &[Series]) -> serde_json::Value {
    let Some(s) = series.first() else { return serde_json::Value::Null };
    let avg = |f: fn(&Point) -> f64| average(s, f);
    serde_json::json!({
        "cipher": s.cipher,
        "aesni": s.aesni,
        "encrypt_mbs": avg(|p| p.encrypt_mbs),
        "decrypt_mbs": avg(|p| p.decrypt_mbs),
        "mean_mbs": avg(|p| p.mean_mbs),
    })
}

/// The memory a measurement of `bytes` needs: plaintext and ciphertext buffers.
pub fn memory_needed(bytes: usize) -> u64 {
    2 * bytes as u64 + (16 << 20)
}

/// Measures in this process, with whatever AES-NI setting its OpenSSL started with.
pub fn measure_here(ciphers: &[Algo], sizes: &[(&str, usize)], threads: usize, runs: usize) -> Result<Vec<Series>> {
    let largest = sizes.iter().map(|(_, b)| *b).max().unwrap_or(0);
    let mut plain = vec![0u8; largest];
    openssl::rand::rand_bytes(&mut plain)?;
    let mut out = vec![0u8; largest];
    let aesni = !masked();
    let mut all = Vec::new();
    for &algo in ciphers {
        let mut points = Vec::new();
        for (label, bytes) in sizes {
            if crate::interrupt::interrupted() {
                return Err(crate::interrupt::Interrupted.into());
            }
            eprintln!("{} {} {label}...", algo.name(), if aesni { "with AES-NI" } else { "without AES-NI" });
            let mut p = measure(algo, &mut plain[..*bytes], &mut out[..*bytes], threads, runs)?;
            p.label = label.to_string();
            points.push(p);
        }
        all.push(Series { cipher: algo.name().into(), aesni, threads, points });
    }
    Ok(all)
}

/// The state of one thread's share: a context per direction, and GCM's tag.
struct Worker {
    enc: CipherCtx,
    dec: CipherCtx,
    tag: [u8; 16],
}

impl Worker {
    fn new(algo: Algo, key: &[u8]) -> Result<Self> {
        let (mut enc, mut dec) = (CipherCtx::new()?, CipherCtx::new()?);
        let key = &key[..algo.cipher().key_length()];
        enc.encrypt_init(Some(algo.cipher()), Some(key), None)?;
        dec.decrypt_init(Some(algo.cipher()), Some(key), None)?;
        enc.set_padding(false);
        dec.set_padding(false);
        Ok(Self { enc, dec, tag: [0; 16] })
    }

    /// Encrypts `plain` into `out` (same length), or decrypts it when `encrypt` is false.
    fn pass(&mut self, algo: Algo, encrypt: bool, input: &[u8], out: &mut [u8], first_unit: u64) -> Result<()> {
        let ctx = if encrypt { &mut self.enc } else { &mut self.dec };
        let init = |ctx: &mut CipherCtx, iv: &[u8]| {
            if encrypt {
                ctx.encrypt_init(None, None, Some(iv))
            } else {
                ctx.decrypt_init(None, None, Some(iv))
            }
        };
        match algo {
            Algo::Xts => {
                for (n, (i, o)) in input.chunks(SECTOR).zip(out.chunks_mut(SECTOR)).enumerate() {
                    let mut tweak = [0u8; 16];
                    tweak[..8].copy_from_slice(&(first_unit + n as u64).to_le_bytes());
                    init(ctx, &tweak)?;
                    // SAFETY: XTS writes exactly as many bytes as it reads, and `o` is as long as `i`.
                    unsafe { ctx.cipher_update_unchecked(i, Some(o))? };
                }
            }
            Algo::Gcm | Algo::Cbc => {
                init(ctx, &[7u8; 16][..algo.cipher().iv_length()])?;
                // SAFETY: with padding off and whole blocks, CBC and GCM write exactly as
                // many bytes as they read, and `out` is as long as `input`.
                unsafe { ctx.cipher_update_unchecked(input, Some(out))? };
                if algo == Algo::Gcm {
                    if encrypt {
                        ctx.cipher_final(&mut [0u8; 16])?;
                        ctx.tag(&mut self.tag)?;
                    } else {
                        // Decryption checks the tag the encryption made, as a reader would.
                        ctx.set_tag(&self.tag)?;
                        ctx.cipher_final(&mut [0u8; 16]).context("AES-GCM tag check failed")?;
                    }
                }
            }
        }
        Ok(())
    }
}

/// Splits `len` bytes into `threads` shares of whole data units.
fn shares(len: usize, threads: usize) -> Vec<std::ops::Range<usize>> {
    let units = len.div_ceil(SECTOR);
    let per = units.div_ceil(threads).max(1) * SECTOR;
    (0..len).step_by(per).map(|a| a..(a + per).min(len)).collect()
}

/// Throughput of `algo` over `plain` on `threads` threads: median of `runs` runs of
/// encrypting and decrypting the whole buffer.
pub fn measure(algo: Algo, plain: &mut [u8], cipher: &mut [u8], threads: usize, runs: usize) -> Result<Point> {
    if !plain.len().is_multiple_of(SECTOR) || plain.len() != cipher.len() {
        bail!("buffers must be equal and whole multiples of {SECTOR} bytes");
    }
    let len = plain.len();
    let key: [u8; 64] = std::array::from_fn(|i| (i as u8).wrapping_mul(37).wrapping_add(11));
    let ranges = shares(plain.len(), threads);
    let mut workers = ranges.iter().map(|_| Worker::new(algo, &key)).collect::<Result<Vec<_>>>()?;
    let mut once = |encrypt: bool, passes: u32, workers: &mut [Worker]| -> Result<Duration> {
        let (src, dst): (&[u8], &mut [u8]) = if encrypt { (&*plain, &mut *cipher) } else { (&*cipher, &mut *plain) };
        let mut dst_parts: Vec<&mut [u8]> = Vec::new();
        let mut rest = dst;
        for r in &ranges {
            let (head, tail) = rest.split_at_mut(r.len());
            dst_parts.push(head);
            rest = tail;
        }
        let t = Instant::now();
        std::thread::scope(|s| {
            let handles: Vec<_> = workers
                .iter_mut()
                .zip(dst_parts)
                .zip(&ranges)
                .map(|((w, out), r)| {
                    s.spawn(move || -> Result<()> {
                        for _ in 0..passes {
                            w.pass(algo, encrypt, &src[r.clone()], out, (r.start / SECTOR) as u64)?;
                        }
                        Ok(())
                    })
                })
                .collect();
            handles.into_iter().try_for_each(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
        })?;
        Ok(t.elapsed())
    };
    // One untimed pass each way fills the ciphertext and tags, and calibrates the repeats.
    let one = once(true, 1, &mut workers)?;
    once(false, 1, &mut workers)?;
    let passes = (MIN_TIME.as_secs_f64() / one.as_secs_f64().max(1e-9)).ceil().clamp(1.0, 1e6) as u32;
    let mbs = |d: Duration| len as f64 * f64::from(passes) / d.as_secs_f64() / 1e6;
    let (mut enc, mut dec) = (Vec::new(), Vec::new());
    for _ in 0..runs.max(1) {
        let e = once(true, passes, &mut workers)?;
        let d = once(false, passes, &mut workers)?;
        enc.push(mbs(e));
        dec.push(mbs(d));
    }
    let (e, d) = (crate::stats::median(&enc), crate::stats::median(&dec));
    let runs = enc.iter().zip(&dec).map(|(e, d)| [*e, *d]).collect();
    Ok(Point { label: String::new(), bytes: len, encrypt_mbs: e, decrypt_mbs: d, mean_mbs: (e + d) / 2.0, runs })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_cipher_round_trips_and_reports_a_rate() {
        for algo in [Algo::Xts, Algo::Gcm, Algo::Cbc] {
            let original: Vec<u8> = (0..64 * 1024).map(|i| (i % 251) as u8).collect();
            let mut plain = original.clone();
            let mut cipher = vec![0u8; plain.len()];
            let p = measure(algo, &mut plain, &mut cipher, 2, 1).unwrap();
            assert!(p.encrypt_mbs > 1.0 && p.decrypt_mbs > 1.0, "{algo:?}: {p:?}");
            assert_eq!(plain, original, "{algo:?} must decrypt back to the plaintext");
            assert_ne!(cipher[..4096], original[..4096], "{algo:?} must change the bytes");
        }
    }

    #[test]
    fn xts_units_differ_by_their_tweak() {
        let mut plain = vec![0u8; 2 * SECTOR];
        let mut cipher = vec![0u8; 2 * SECTOR];
        measure(Algo::Xts, &mut plain, &mut cipher, 1, 1).unwrap();
        assert_ne!(cipher[..SECTOR], cipher[SECTOR..], "equal sectors must encrypt differently");
    }

    #[test]
    fn sizes_parse_and_shares_cover_the_buffer() {
        assert_eq!(parse_size("100KB").unwrap().1, 102_400);
        assert_eq!(parse_size("1 gb").unwrap().1, 1 << 30);
        assert!(parse_size("3MB").unwrap_err().to_string().contains("100KB, 500KB"));
        let s = shares(25 * SECTOR, 2);
        assert_eq!((s.len(), s[0].end, s[1].end), (2, 13 * SECTOR, 25 * SECTOR));
    }
}
