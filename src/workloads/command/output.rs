//! A script's output, read as it comes and kept bounded. What dbvs needs of it is the
//! figure, looked for in each block of whole lines as it passes, and its end (the last
//! [`TAIL_BYTES`]), which the run's log shows and errors quote: a benchmark that prints
//! gigabytes costs dbvs no memory.

use std::collections::VecDeque;
use std::io::Read;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How much of the end of an output is kept.
pub const TAIL_BYTES: usize = 64 << 10;
/// A line longer than this is looked at in pieces.
const LINE_BYTES: usize = 1 << 20;

/// Looks for the figure in a block of whole lines: the last one found in the block, if any.
pub type Scan = Box<dyn Fn(&str) -> Option<String> + Send>;

/// What a stream held, in the end.
#[derive(Debug)]
pub struct Captured {
    /// Its last [`TAIL_BYTES`], whole lines only when the output was longer.
    pub tail: String,
    /// How many bytes it had in all.
    pub total: u64,
    /// The last figure the scan found as the output passed.
    pub found: Option<String>,
}

impl Captured {
    /// Whether the tail is the whole output.
    pub fn complete(&self) -> bool {
        self.total <= TAIL_BYTES as u64
    }

    /// The last `n` lines, joined by " | " for a one-line message.
    pub fn last_lines(&self, n: usize) -> String {
        let lines: Vec<&str> = self.tail.lines().collect();
        lines[lines.len().saturating_sub(n)..].join(" | ")
    }

    /// The tail for the run's log, saying when it is not all.
    pub fn shown(&self) -> String {
        match self.complete() {
            true => self.tail.clone(),
            false => format!("[the last {} KiB of {:.1} MB]\n{}", TAIL_BYTES >> 10, self.total as f64 / 1e6, self.tail),
        }
    }
}

/// A stream as far as it was read.
struct Stream {
    tail: VecDeque<u8>,
    total: u64,
    /// Read, not yet scanned: the line being written.
    line: Vec<u8>,
    found: Option<String>,
    scan: Scan,
}

impl Stream {
    fn push(&mut self, chunk: &[u8]) {
        self.total += chunk.len() as u64;
        let keep = &chunk[chunk.len().saturating_sub(TAIL_BYTES)..];
        let over = (self.tail.len() + keep.len()).saturating_sub(TAIL_BYTES);
        self.tail.drain(..over);
        self.tail.extend(keep);
        match chunk.iter().rposition(|&b| b == b'\n') {
            Some(end) => {
                self.line.extend_from_slice(&chunk[..=end]);
                self.scan_line();
                self.line.extend_from_slice(&chunk[end + 1..]);
            }
            None => {
                self.line.extend_from_slice(chunk);
                if self.line.len() > LINE_BYTES {
                    self.scan_line();
                }
            }
        }
    }

    fn scan_line(&mut self) {
        if let Some(found) = (self.scan)(&String::from_utf8_lossy(&self.line)) {
            self.found = Some(found);
        }
        self.line.clear();
    }

    /// The end: the last line scanned too, the tail cut to whole lines.
    fn end(&mut self) -> Captured {
        self.scan_line();
        let (a, b) = self.tail.as_slices();
        let mut tail = String::from_utf8_lossy(&[a, b].concat()).into_owned();
        if self.total > TAIL_BYTES as u64 {
            let first = tail.find('\n').map_or(0, |i| i + 1);
            tail.drain(..first);
        }
        Captured { tail, total: self.total, found: self.found.take() }
    }
}

/// Reads a pipe to its end on a thread of its own, so neither of a script's pipes fills
/// and blocks it.
pub struct Reader {
    stream: Arc<Mutex<Stream>>,
    thread: JoinHandle<()>,
}

impl Reader {
    pub fn spawn(pipe: Option<impl Read + Send + 'static>, scan: Scan) -> Reader {
        let stream = Stream { tail: VecDeque::new(), total: 0, line: Vec::new(), found: None, scan };
        let stream = Arc::new(Mutex::new(stream));
        let shared = Arc::clone(&stream);
        let thread = std::thread::spawn(move || {
            let Some(mut pipe) = pipe else { return };
            let mut buf = vec![0u8; TAIL_BYTES];
            loop {
                match pipe.read(&mut buf) {
                    Ok(0) => break,
                    Ok(n) => shared.lock().unwrap_or_else(|p| p.into_inner()).push(&buf[..n]),
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(_) => break,
                }
            }
        });
        Reader { stream, thread }
    }

    /// What was read: all of it once the pipe closes, or what came within `within` when a
    /// process out of dbvs's reach still holds it open (a server the script started).
    pub fn finish(self, within: Duration) -> Captured {
        let until = Instant::now() + within;
        while !self.thread.is_finished() && Instant::now() < until {
            std::thread::sleep(Duration::from_millis(10));
        }
        let mut stream = self.stream.lock().unwrap_or_else(|p| p.into_inner());
        stream.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &'static [u8], scan: Scan) -> Captured {
        Reader::spawn(Some(text), scan).finish(Duration::from_secs(60))
    }

    #[test]
    fn a_long_output_keeps_its_tail_in_whole_lines_and_is_scanned_as_it_passes() {
        let mut text = b"tps = 12\n".to_vec();
        text.extend(b"yyyyyyy\n".repeat(100_000));
        text.extend(b"the end");
        let text: &'static [u8] = text.leak();
        let scan: Scan = Box::new(|block| block.lines().rfind(|l| l.starts_with("tps")).map(String::from));
        let c = read(text, scan);
        assert_eq!(c.total, text.len() as u64);
        assert!(!c.complete() && c.tail.len() <= TAIL_BYTES && c.tail.starts_with("yyyyyyy\n"), "{}", &c.tail[..20]);
        assert_eq!(c.found.as_deref(), Some("tps = 12"));
        assert_eq!(c.last_lines(2), "yyyyyyy | the end");
        assert!(c.shown().starts_with("[the last 64 KiB of 0.8 MB]"), "{}", &c.shown()[..40]);
    }

    #[test]
    fn a_short_output_is_whole_and_its_last_line_is_scanned() {
        let c = read(b"a\nb", Box::new(|block| block.contains('b').then(|| block.to_string())));
        assert!(c.complete());
        assert_eq!((c.tail.as_str(), c.found.as_deref(), c.shown()), ("a\nb", Some("b"), "a\nb".to_string()));
    }
}
