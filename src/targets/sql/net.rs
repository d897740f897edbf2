//! The socket under dbvs's own database clients (the PostgreSQL and MariaDB wires).
//!
//! A worker blocked in a read must not outlive its run: a server host that vanishes, or a
//! network that drops the connection silently, would otherwise leave the read waiting for
//! good and the run with it, Ctrl-C included (workers look for it between units). So TCP
//! connections probe an idle peer (keepalive) and give up on data left unacknowledged, and
//! every read wakes each second to see whether the user interrupted the run.

use socket2::{SockRef, TcpKeepalive};
use std::io::{self, ErrorKind, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::Duration;

/// How long a read waits before it looks whether the run was interrupted.
const POLL: Duration = Duration::from_secs(1);
/// An idle connection's first probe, the probes' spacing and how many may go unanswered.
const KEEPALIVE_IDLE: Duration = Duration::from_secs(10);
const KEEPALIVE_INTERVAL: Duration = Duration::from_secs(5);
const KEEPALIVE_PROBES: u32 = 3;
/// How long sent data may stay unacknowledged before the connection counts as lost: a
/// live server's kernel acknowledges at once, however long the statement runs.
const UNACKNOWLEDGED: Duration = Duration::from_secs(30);

pub enum Socket {
    Tcp(TcpStream),
    Unix(UnixStream),
}

impl Socket {
    /// Connects to `host:port`, trying each address it resolves to in turn (`localhost`
    /// may give `::1` first to a server that listens on 127.0.0.1 only).
    pub fn tcp(host: &str, port: u16, timeout: Duration) -> io::Result<Self> {
        let mut last = None;
        for addr in (host, port).to_socket_addrs()? {
            match TcpStream::connect_timeout(&addr, timeout) {
                Ok(s) => return Self::tuned_tcp(s),
                Err(e) => last = Some(e),
            }
        }
        Err(last.unwrap_or_else(|| io::Error::new(ErrorKind::NotFound, format!("{host} resolves to no address"))))
    }

    fn tuned_tcp(s: TcpStream) -> io::Result<Self> {
        s.set_nodelay(true)?;
        let sock = SockRef::from(&s);
        let probes = TcpKeepalive::new()
            .with_time(KEEPALIVE_IDLE)
            .with_interval(KEEPALIVE_INTERVAL)
            .with_retries(KEEPALIVE_PROBES);
        sock.set_tcp_keepalive(&probes)?;
        sock.set_tcp_user_timeout(Some(UNACKNOWLEDGED))?;
        s.set_read_timeout(Some(POLL))?;
        Ok(Socket::Tcp(s))
    }

    /// Connects to the Unix socket at `path`.
    pub fn unix(path: &Path) -> io::Result<Self> {
        let s = UnixStream::connect(path)?;
        s.set_read_timeout(Some(POLL))?;
        Ok(Socket::Unix(s))
    }

    /// Reads what has arrived, waiting for something; fails with `ErrorKind::Interrupted`
    /// when the run was interrupted while it waited.
    pub fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            let got = match self {
                Socket::Tcp(s) => s.read(buf),
                Socket::Unix(s) => s.read(buf),
            };
            match got {
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut | ErrorKind::Interrupted) => {
                    if crate::interrupt::interrupted() {
                        return Err(io::Error::new(ErrorKind::Interrupted, "interrupted while waiting for the server"));
                    }
                }
                other => return other,
            }
        }
    }

    pub fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        match self {
            Socket::Tcp(s) => s.write_all(buf),
            Socket::Unix(s) => s.write_all(buf),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    #[test]
    fn a_read_from_a_silent_server_goes_on_waiting_past_its_poll() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let server = std::thread::spawn(move || {
            let (mut s, _) = listener.accept().unwrap();
            std::thread::sleep(POLL + Duration::from_millis(500));
            s.write_all(b"late").unwrap();
        });
        let mut c = Socket::tcp("127.0.0.1", port, Duration::from_secs(5)).unwrap();
        let mut buf = [0u8; 8];
        let n = c.read(&mut buf).unwrap();
        assert_eq!(&buf[..n], b"late");
        server.join().unwrap();
    }

    #[test]
    fn a_name_with_no_listening_address_is_refused_not_waited_on() {
        let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        // The listener is gone: every address localhost resolves to refuses.
        let e = Socket::tcp("localhost", port, Duration::from_secs(5)).err().unwrap();
        assert_eq!(e.kind(), ErrorKind::ConnectionRefused, "{e}");
    }
}
