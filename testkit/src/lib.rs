//! argus-testkit owns the real peer systems that Argus' tests start and stop on loopback, so that the
//! tests of several crates start them one way: `slurm` (munged and slurmctld). A dev-dependency only;
//! never published.
//!
//! The peers are installed by scripts/install-peers.sh. Where one is missing, a test calls
//! [`missing_peer`]: skipped, saying why, on a developer's machine; a failure under CI.

pub mod slurm;

/// A peer system a test needs is not installed: `reason` says which and how to install it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Missing(pub String);

impl std::fmt::Display for Missing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Missing {}

/// Reports a test that cannot run for want of a peer: printed as skipped, or, when the environment
/// has `CI` set (CI installs every peer first), a panic, so that a missing install step fails the run
/// instead of passing it untested.
pub fn missing_peer(missing: &Missing) {
    if std::env::var_os("CI").is_some() {
        panic!("{missing} (CI is set: every peer must be installed)");
    }
    eprintln!("skipped: {missing}");
}

/// `name` in PATH, or in /usr/sbin (daemons, often not in a user's PATH).
pub fn program(name: &str, install: &str) -> Result<std::path::PathBuf, Missing> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain([std::path::PathBuf::from("/usr/sbin")])
        .map(|d| d.join(name))
        .find(|p| p.is_file())
        .ok_or_else(|| Missing(format!("{name} not found in PATH or /usr/sbin: {install}")))
}

/// A TCP port on loopback that nothing listened on a moment ago.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}
