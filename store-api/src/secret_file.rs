//! Secrets kept in files, as Kubernetes mounts a Secret: a remote store's `bearer_token_file` and
//! `basic_auth.password_file`, `[server] alert_token_file` for the alerts the rules and the analyzer
//! post.

use argus_model::Secret;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

/// A secret written in the section, or the file it is read from.
#[derive(Debug, Clone)]
pub enum SecretSource {
    Inline(Secret),
    File(SecretFile),
}

impl SecretSource {
    /// The secret to send now: the inline one, or the file's current text (see [`SecretFile::current`]).
    pub fn current(&self) -> Option<Secret> {
        match self {
            SecretSource::Inline(s) => Some(s.clone()),
            SecretSource::File(f) => f.current(),
        }
    }
}

/// A secret in a file. It is read when the client is built, so that an unreadable or empty file stops
/// the start with the key that names it, and again for every request, so that a rotated Secret is sent
/// without a restart. A read that fails later keeps the last good secret (a warning says why).
#[derive(Debug, Clone)]
pub struct SecretFile {
    /// The key that names the file (`bearer_token_file`), for errors.
    pub key: &'static str,
    pub path: PathBuf,
    last: Arc<Mutex<Option<Secret>>>,
}

impl SecretFile {
    pub fn new(key: &'static str, path: PathBuf) -> SecretFile {
        SecretFile { key, path, last: Arc::default() }
    }

    /// The file named by `key`, read now so that an unreadable or empty one stops the start.
    pub fn open(key: &'static str, path: &Path) -> Result<SecretFile, String> {
        let f = SecretFile::new(key, path.to_path_buf());
        f.read()?;
        Ok(f)
    }

    /// Reads the file: its text without the trailing newline, which must not be empty. The error
    /// names the key and the path, never the secret.
    pub fn read(&self) -> Result<Secret, String> {
        let fail = |why: String| format!("{} {}: {why}", self.key, self.path.display());
        let text = std::fs::read_to_string(&self.path).map_err(|e| fail(e.to_string()))?;
        let text = text.trim_end_matches(['\n', '\r']);
        if text.trim().is_empty() {
            return Err(fail("empty".into()));
        }
        let secret = Secret::new(text);
        *self.last.lock().unwrap_or_else(PoisonError::into_inner) = Some(secret.clone());
        Ok(secret)
    }

    /// The file's secret now, or the last one read when the file cannot be read at the moment; `None`
    /// only when it was never readable.
    pub fn current(&self) -> Option<Secret> {
        match self.read() {
            Ok(s) => Some(s),
            Err(error) => {
                tracing::warn!(%error, "Cannot read a secret file; sending the last secret read from it");
                self.last.lock().unwrap_or_else(PoisonError::into_inner).clone()
            }
        }
    }
}
