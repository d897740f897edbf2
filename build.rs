//! Stamps the binary with the commit it was built from, so every run record and report
//! (and the figures generated from them into docs/results/) says which code measured it.

fn main() {
    let git = |args: &[&str]| {
        std::process::Command::new("git")
            .args(args)
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
    };
    let mut commit = git(&["rev-parse", "--short=12", "HEAD"]).unwrap_or_else(|| "unknown commit".into());
    // Built from changes not yet committed: the commit alone would claim code it did not run.
    if git(&["status", "--porcelain", "--untracked-files=no"]).is_some_and(|s| !s.is_empty()) {
        commit.push_str(" with uncommitted changes");
    }
    println!("cargo:rustc-env=DBVS_COMMIT={commit}");
    // An edit after the last commit changes what the stamp must say.
    for tracked in ["src", "Cargo.toml", "Cargo.lock"] {
        println!("cargo:rerun-if-changed={tracked}");
    }
    // A new commit moves HEAD or the branch it names (in a worktree, .git is a file).
    if let Some(dir) = git(&["rev-parse", "--git-dir"]) {
        println!("cargo:rerun-if-changed={dir}/HEAD");
        if let Some(branch) = git(&["symbolic-ref", "-q", "HEAD"]) {
            println!("cargo:rerun-if-changed={dir}/{branch}");
        }
    }
    println!("cargo:rerun-if-changed=build.rs");
}
