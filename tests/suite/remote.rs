//! Remote drivers (`--clients`), for real: two client "hosts" in network namespaces, each
//! reached over a veth pair and running its own OpenSSH server, drive one server the test
//! owns (PostgreSQL, then MariaDB) over the namespaces' addresses only.

use crate::common::*;
use dbvs::targets::managed_maria::ManagedMaria;
use dbvs::targets::managed_pg::ManagedPg;
use dbvs::targets::{sql, Binaries, Engine, TargetOptions};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// One test at a time owns the namespaces (their names and addresses are fixed); the tests
/// only check what their runs recorded, so they share the machine with the other tests.
static NAMESPACES: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Client hosts: network namespaces `dbvsr1..N`, host i at 10.231.i.2, this machine at
/// 10.231.i.1 on the other end of its veth pair, each with an sshd that lets in one key.
struct Hosts {
    dir: tempfile::TempDir,
    sshd: Vec<Child>,
}

const HOSTS: usize = 2;

fn ip(args: &[&str]) -> std::process::Output {
    Command::new("ip").args(args).output().expect("ip (iproute2) runs")
}

fn must(cmd: &mut Command) {
    let o = cmd.output().unwrap();
    assert!(o.status.success(), "{cmd:?}: {}", String::from_utf8_lossy(&o.stderr));
}

impl Hosts {
    fn start() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        Self::remove();
        for i in 1..=HOSTS {
            let (ns, here, there) = (format!("dbvsr{i}"), format!("dbvsh{i}"), format!("dbvsn{i}"));
            let run = |args: &[&str]| must(Command::new("ip").args(args));
            run(&["netns", "add", &ns]);
            run(&["link", "add", &here, "type", "veth", "peer", "name", &there]);
            run(&["link", "set", &there, "netns", &ns]);
            run(&["addr", "add", &format!("10.231.{i}.1/30"), "dev", &here]);
            run(&["link", "set", &here, "up"]);
            let inside = |args: &[&str]| must(Command::new("ip").args(["netns", "exec", &ns, "ip"]).args(args));
            inside(&["addr", "add", &format!("10.231.{i}.2/30"), "dev", &there]);
            inside(&["link", "set", &there, "up"]);
            inside(&["link", "set", "lo", "up"]);
            // Every address of this machine (the server's included) through the pair.
            inside(&["route", "add", "default", "via", &format!("10.231.{i}.1")]);
        }
        for key in ["host_key", "id"] {
            must(Command::new("ssh-keygen").args(["-q", "-t", "ed25519", "-N", "", "-f"]).arg(d.join(key)));
        }
        std::fs::copy(d.join("id.pub"), d.join("authorized_keys")).unwrap();
        std::fs::create_dir_all("/run/sshd").unwrap();
        let sshd = (1..=HOSTS).map(|i| Self::sshd(d, i)).collect();
        std::fs::write(
            d.join("ssh_config"),
            format!(
                "Host *\n  IdentityFile {}\n  UserKnownHostsFile {}\n  StrictHostKeyChecking accept-new\n  LogLevel ERROR\n",
                d.join("id").display(),
                d.join("known_hosts").display()
            ),
        )
        .unwrap();
        let hosts = Self { dir, sshd };
        for i in 1..=HOSTS {
            hosts.wait_for_ssh(i);
        }
        hosts
    }

    fn sshd(d: &Path, i: usize) -> Child {
        let config = d.join(format!("sshd{i}"));
        std::fs::write(
            &config,
            format!(
                "ListenAddress 10.231.{i}.2\nHostKey {}\nAuthorizedKeysFile {}\nPermitRootLogin prohibit-password\n\
                 StrictModes no\nUsePAM no\nPidFile none\n",
                d.join("host_key").display(),
                d.join("authorized_keys").display()
            ),
        )
        .unwrap();
        let sshd = dbvs::sys::require("sshd", "openssh-server").unwrap();
        Command::new("ip")
            .args(["netns", "exec", &format!("dbvsr{i}")])
            .arg(sshd)
            .arg("-D")
            .arg("-f")
            .arg(&config)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap()
    }

    fn wait_for_ssh(&self, i: usize) {
        let t = Instant::now();
        loop {
            let o = Command::new("ssh")
                .arg("-F")
                .arg(self.ssh_config())
                .args(["-o", "BatchMode=yes", &host(i), "true"])
                .output();
            if o.is_ok_and(|o| o.status.success()) {
                return;
            }
            assert!(t.elapsed() < Duration::from_secs(20), "the sshd in namespace dbvsr{i} never let the test in");
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn ssh_config(&self) -> PathBuf {
        self.dir.path().join("ssh_config")
    }

    /// What a killed test left: its namespaces (their sshd ends with them) and pairs.
    fn remove() {
        for i in 1..=HOSTS {
            if let Ok(pids) = String::from_utf8(ip(&["netns", "pids", &format!("dbvsr{i}")]).stdout) {
                for pid in pids.split_whitespace().filter_map(|p| p.parse::<i32>().ok()) {
                    // SAFETY: kill has no memory effects.
                    unsafe { libc::kill(pid, libc::SIGKILL) };
                }
            }
            ip(&["netns", "del", &format!("dbvsr{i}")]);
            ip(&["link", "del", &format!("dbvsh{i}")]);
        }
    }

    /// Kills host `i`'s dbvs agent, as a crash or a pulled cable would end it.
    fn kill_agent(&self, i: usize) {
        let pids = String::from_utf8(ip(&["netns", "pids", &format!("dbvsr{i}")]).stdout).unwrap();
        let mut killed = 0;
        for pid in pids.split_whitespace() {
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            if String::from_utf8_lossy(&cmdline).contains("agent") {
                // SAFETY: kill has no memory effects.
                unsafe { libc::kill(pid.parse().unwrap(), libc::SIGKILL) };
                killed += 1;
            }
        }
        assert!(killed > 0, "no dbvs agent ran in namespace dbvsr{i}");
    }
}

impl Drop for Hosts {
    fn drop(&mut self) {
        for s in &mut self.sshd {
            let _ = s.kill();
            let _ = s.wait();
        }
        Self::remove();
    }
}

fn host(i: usize) -> String {
    format!("root@10.231.{i}.2")
}

/// A server of one engine that listens on loopback and on this machine's end of every
/// pair, and lets the namespaces' addresses in.
enum Server {
    Postgres(ManagedPg),
    Mariadb(ManagedMaria),
}

impl Server {
    fn start(engine: Engine, dir: &Path) -> Self {
        let data = dir.join("server");
        match engine {
            Engine::Postgres => {
                let listen =
                    std::iter::once("127.0.0.1".to_string()).chain((1..=HOSTS).map(|i| format!("10.231.{i}.1")));
                let settings = [("listen_addresses".to_string(), listen.collect::<Vec<_>>().join(","))];
                let pg = ManagedPg::start(&Binaries::Packaged, &data, None, &settings, &Default::default()).unwrap();
                let hba = pg.data_dir().join("pg_hba.conf");
                let mut rules = std::fs::read_to_string(&hba).unwrap();
                rules.push_str("host all all 10.231.0.0/16 trust\n");
                std::fs::write(&hba, rules).unwrap();
                let server = Self::Postgres(pg);
                server.admin("SELECT pg_reload_conf()");
                server
            }
            Engine::Mariadb => {
                // No reverse lookups of the clients' addresses: this machine has no DNS.
                let settings =
                    [("bind-address", "0.0.0.0"), ("skip-name-resolve", "ON")].map(|(k, v)| (k.into(), v.into()));
                let server = Self::Mariadb(
                    ManagedMaria::start(&Binaries::Packaged, &data, None, &settings, &Default::default()).unwrap(),
                );
                server.admin("CREATE USER 'dbvs'@'10.231.%'");
                server.admin("GRANT ALL ON *.* TO 'dbvs'@'10.231.%'");
                server
            }
            Engine::Sqlite => unreachable!("remote clients drive servers"),
        }
    }

    fn url(&self, addr: &str, db: &str) -> String {
        match self {
            Self::Postgres(s) => format!("postgres://dbvs@{addr}:{}/{db}", s.port),
            Self::Mariadb(s) => format!("mysql://dbvs@{addr}:{}/{db}", s.port),
        }
    }

    fn connect(&self) -> dbvs::targets::Connection {
        let db = match self {
            Self::Postgres(_) => "postgres",
            Self::Mariadb(_) => "mysql",
        };
        let target =
            dbvs::targets::open(&self.url("127.0.0.1", db).parse().unwrap(), TargetOptions::default()).unwrap();
        target.existing().unwrap().connect().unwrap()
    }

    fn admin(&self, sql: &str) {
        sql::exec(&mut self.connect(), sql).unwrap();
    }

    /// Run copies the server still holds.
    fn run_copies(&self) -> Vec<String> {
        let query = match self {
            Self::Postgres(_) => "SELECT datname FROM pg_database",
            Self::Mariadb(_) => "SELECT schema_name FROM information_schema.schemata",
        };
        let rows = sql::adhoc(&mut self.connect(), query).unwrap();
        (0..rows.len()).map(|r| rows.text(r, 0).unwrap().into_owned()).filter(|n| n.contains("_run_")).collect()
    }
}

/// The target, client hosts and workload of a study or capacity file whose managed
/// PostgreSQL listens on this machine's end of the first pair.
fn driven_from(hosts: &Hosts) -> String {
    format!(
        "[target]\nengine = \"postgres\"\nlisten = \"10.231.1.1\"\n\
         [clients]\nhosts = [\"{}\", \"{}\"]\ndbvs = \"{}\"\nssh_config = \"{}\"\n\
         [workload]\nname = \"tpcb\"\nsize = \"1\"\nthreads = 2\nduration = \"1.5s\"\nwarmup = \"0.5s\"\n",
        host(1),
        host(2),
        env!("CARGO_BIN_EXE_dbvs"),
        hosts.ssh_config().display()
    )
}

/// The run records a study or capacity search wrote under `out`, by file name.
fn records_in(out: &Path) -> std::collections::BTreeMap<String, Value> {
    let runs = std::fs::read_dir(out.join("runs")).unwrap().map(|e| e.unwrap().path());
    runs.filter(|p| p.to_string_lossy().ends_with(".json") && !p.to_string_lossy().ends_with(".spec.json"))
        .map(|p| (p.to_string_lossy().into_owned(), serde_json::from_slice(&std::fs::read(&p).unwrap()).unwrap()))
        .collect()
}

macro_rules! per_engine {
    ($($engine:ident: $variant:expr),*) => {$(
        #[test]
        fn $engine() {
            let (_namespaces, _share) = (NAMESPACES.lock().unwrap_or_else(|p| p.into_inner()), long_share());
            client_hosts_drive_one_server_and_a_lost_host_fails_the_run($variant);
        }
    )*};
}

fn client_hosts_drive_one_server_and_a_lost_host_fails_the_run(engine: Engine) {
    let hosts = Hosts::start();
    let dir = reachable_tempdir();
    let server = Server::start(engine, dir.path());
    let target = server.url("10.231.1.1", "tpcb");
    let config = hosts.ssh_config().display().to_string();
    let clients = format!("{},{}", host(1), host(2));
    let exe = env!("CARGO_BIN_EXE_dbvs");
    let json = dir.path().join("run.json");
    let remote = |extra: &[&str]| {
        let mut args = vec!["run", "--target", &target, "--workload", "tpcb", "--size", "1", "--no-store"];
        args.extend(["--clients", &clients, "--client-dbvs", exe, "--ssh-config", &config]);
        args.extend(["--json", json.to_str().unwrap(), "--report-interval", "1s"]);
        args.extend(extra);
        args.iter().map(|s| s.to_string()).collect::<Vec<_>>()
    };

    // Two hosts with two workers each; every figure is theirs, merged.
    let o = command().args(remote(&["--threads", "4", "--warmup", "1s", "--duration", "3s"])).output().unwrap();
    assert!(o.status.success(), "{}\n{}", stdout(&o), stderr(&o));
    let r: Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let units = r["counts"]["units"].as_u64().unwrap();
    let rows = r["clients"]["hosts"].as_array().unwrap();
    assert_eq!(rows.len(), 2);
    assert!(rows
        .iter()
        .all(|h| h["workers"] == 2 && h["units"].as_u64().unwrap() > 0 && h["cpu_pct"].as_f64().unwrap() > 0.0));
    assert_eq!(rows.iter().map(|h| h["units"].as_u64().unwrap()).sum::<u64>(), units);
    assert_eq!(r["unit_latency"]["count"].as_u64(), Some(units), "the merged histogram holds every unit");
    assert!(!r["intervals"].as_array().unwrap().is_empty());
    let counted = &r["clients"]["server"];
    assert!(counted["commits"].as_u64().unwrap() >= counted["client_committed"].as_u64().unwrap(), "{counted}");
    for c in r["checks"].as_array().unwrap() {
        assert_eq!(c["ok"], true, "{c}");
    }
    assert!(stdout(&o).contains("client host"), "{}", stdout(&o));

    // One host killed mid-run: the run fails naming it, nothing is counted, the copy goes.
    let (mut child, lines) = spawn_into_window(&remote(&["--threads", "2", "--warmup", "1s", "--duration", "60s"]));
    let t = Instant::now();
    hosts.kill_agent(2);
    let rest: Vec<String> = lines.map_while(Result::ok).collect();
    let status = child.wait().unwrap();
    assert!(!status.success());
    assert!(t.elapsed() < Duration::from_secs(30), "the lost host was noticed after {:?}", t.elapsed());
    let said = rest.join("\n");
    assert!(said.contains(&format!("client host {} was lost", host(2))), "{said}");
    let r: Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(r["status"], "failed");
    assert_eq!(r["counts"]["units"], 0, "nothing half-counted");
    assert_eq!(server.run_copies(), Vec::<String>::new());

    // No dbvs on the hosts, and a server they cannot reach: one clear line each.
    let mut args = remote(&["--threads", "2", "--duration", "1s"]);
    let at = args.iter().position(|a| a == exe).unwrap();
    args[at] = "/nonexistent/dbvs".into();
    let o = command().args(&args).output().unwrap();
    assert!(!o.status.success());
    assert!(stderr(&o).contains("is not on it") && stderr(&o).contains("--client-dbvs"), "{}", stderr(&o));
    let args: Vec<String> = remote(&["--threads", "2"])
        .into_iter()
        .map(|a| if a == target { server.url("127.0.0.1", "tpcb") } else { a })
        .collect();
    let o = command().args(&args).output().unwrap();
    assert!(stderr(&o).contains("loopback"), "{}", stderr(&o));
    assert_eq!(server.run_copies(), Vec::<String>::new());
}

per_engine!(postgres: Engine::Postgres, mariadb: Engine::Mariadb);

/// A study whose managed servers listen on this machine's end of the first pair: each
/// run's workers are on the client hosts, which must give the password dbvs made.
#[test]
fn a_study_runs_its_workers_on_client_hosts() {
    let (_namespaces, _share) = (NAMESPACES.lock().unwrap_or_else(|p| p.into_inner()), share());
    let hosts = Hosts::start();
    let dir = reachable_tempdir();
    let study = dir.path().join("study.toml");
    std::fs::write(
        &study,
        format!(
            "name = \"remote\"\nblocks = {{ min = 2, max = 2 }}\n{}\
             [[variants]]\nname = \"plain\"\nkind = \"plain\"\n\
             [[variants]]\nname = \"plain-again\"\nkind = \"plain\"\n",
            driven_from(&hosts)
        ),
    )
    .unwrap();
    let out = dir.path().join("out");
    let o = command().args(["study", study.to_str().unwrap(), "--out", out.to_str().unwrap()]).output().unwrap();
    assert!(o.status.success(), "{}\n{}", stdout(&o), stderr(&o));
    let records: Vec<Value> = records_in(&out).into_values().collect();
    assert!(records.len() >= 4, "two blocks of two variants: {}", records.len());
    for r in &records {
        let rows = r["clients"]["hosts"].as_array().unwrap_or_else(|| panic!("a run drove from here: {r}"));
        assert_eq!(rows.len(), 2);
        assert!(r["checks"].as_array().unwrap().iter().all(|c| c["ok"] == true), "{}", r["checks"]);
    }
    let text = std::fs::read_to_string(&study).unwrap().replace("listen = \"10.231.1.1\"\n", "");
    std::fs::write(&study, text).unwrap();
    let o = command().args(["study", study.to_str().unwrap(), "--out", out.to_str().unwrap()]).output().unwrap();
    assert!(stderr(&o).contains("listen"), "{}", stderr(&o));
}

/// A capacity search whose instances are all driven from the client hosts: every
/// instance's workers are split between both hosts, the hosts' shares add up in the
/// record, and each probe names the busiest host's CPU.
#[test]
fn a_capacity_search_drives_every_instance_from_client_hosts() {
    let (_namespaces, _share) = (NAMESPACES.lock().unwrap_or_else(|p| p.into_inner()), share());
    let hosts = Hosts::start();
    let dir = reachable_tempdir();
    let file = dir.path().join("capacity.toml");
    std::fs::write(
        &file,
        format!(
            "name = \"remote-capacity\"\n{}\
             [sla]\nmin_per_instance = 1\nconfirmations = 1\n\
             [search]\nmax_instances = 2\n\
             [[configurations]]\nname = \"plain\"\nkind = \"plain\"\n",
            driven_from(&hosts)
        ),
    )
    .unwrap();
    let out = dir.path().join("out");
    let o = command().args(["capacity", file.to_str().unwrap(), "--out", out.to_str().unwrap()]).output().unwrap();
    assert!(o.status.success(), "{}\n{}", stdout(&o), stderr(&o));
    let report: Value = serde_json::from_slice(&std::fs::read(out.join("capacity.json")).unwrap()).unwrap();
    let outcome = &report["outcomes"][0];
    assert_eq!(outcome["max_instances"], 2, "{outcome}");
    for p in outcome["probes"].as_array().unwrap() {
        let cpu = p["client_cpu_pct_max"].as_f64().unwrap_or_else(|| panic!("no client CPU: {p}"));
        assert!(cpu > 0.0 && cpu < 100.0, "{p}");
    }
    let (_, two) = records_in(&out).into_iter().find(|(p, _)| p.contains("n002")).expect("the run at two instances");
    assert_eq!(two["instances"].as_array().unwrap().len(), 2);
    let rows = two["clients"]["hosts"].as_array().unwrap();
    assert_eq!(rows.len(), 2);
    for row in rows {
        assert_eq!(row["workers"], 2, "one worker of each instance on each host: {row}");
    }
    let units: u64 = rows.iter().map(|r| r["units"].as_u64().unwrap()).sum();
    assert_eq!(units, two["counts"]["units"].as_u64().unwrap(), "the hosts' units are the run's");
    let server = &two["clients"]["server"];
    assert!(server["commits"].as_u64().unwrap() >= server["client_committed"].as_u64().unwrap(), "{server}");
    let checks = two["checks"].as_array().unwrap();
    assert!(checks.iter().all(|c| c["ok"] == true), "{checks:?}");
    for i in [1, 2] {
        let prefix = format!("instance {i}: ");
        let counted = |c: &&Value| {
            c["detail"].as_str().unwrap().starts_with(&prefix)
                && c["name"] == "the server counted what the clients counted"
        };
        assert!(checks.iter().any(|c| counted(&c)), "instance {i}'s own cross-check: {checks:?}");
    }
}
