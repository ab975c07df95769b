//! `templates:`: the notification template files, read when the configuration loads (and at each
//! reload, which loads it anew). Each entry is a glob (Go's `filepath.Glob`: `*`, `?`, `[…]`),
//! relative to the configuration file's directory as Alertmanager resolves it; a glob that matches
//! nothing is no error (Alertmanager allows files that appear later). The files are parsed after
//! Alertmanager's default templates, in the globs' order and each glob's files in name order.

use super::ConfigError;
use crate::receiver::notification;
use crate::rules::template::TemplateError;
use crate::rules::template::notify::Library;
use std::path::{Path, PathBuf};

/// The library of the defaults and the files `globs` name; `src` and `file` are the configuration's
/// text and name, for errors in the list itself.
pub(super) fn load(globs: &[String], src: &str, file: &str) -> Result<Library, ConfigError> {
    if globs.is_empty() {
        return Ok(notification::defaults().clone());
    }
    let dir = Path::new(file).parent().unwrap_or(Path::new(""));
    let mut files = Vec::new();
    for (i, g) in globs.iter().enumerate() {
        let pattern = if Path::new(g).is_absolute() { PathBuf::from(g) } else { dir.join(g) };
        let err = |reason: String| {
            ConfigError::new(file, super::locate(src, &format!("templates[{i}]"), g), format!("templates[{i}]"), reason)
        };
        for path in glob(&pattern).map_err(err)? {
            let name = path.display().to_string();
            let text = std::fs::read_to_string(&path)
                .map_err(|e| ConfigError::new(&name, None, "", format!("cannot read template file: {e}")))?;
            files.push((name, text));
        }
    }
    notification::library(&files).map_err(|e| {
        let (at, line) = match &e {
            TemplateError::ParseIn { file, line, .. } | TemplateError::Render { file, line, .. } => {
                (file.clone(), Some(*line))
            }
            _ => (file.to_string(), None),
        };
        ConfigError::new(at, line, "", e.to_string())
    })
}

/// Go's `filepath.Glob`: the paths matching `pattern`, sorted within each directory.
fn glob(pattern: &Path) -> Result<Vec<PathBuf>, String> {
    let mut found = vec![PathBuf::new()];
    for comp in pattern.components() {
        let part = comp.as_os_str().to_string_lossy();
        if !part.contains(['*', '?', '[', '\\']) {
            found = found.into_iter().map(|p| p.join(comp)).collect();
            continue;
        }
        check(&part)?;
        let mut next = Vec::new();
        for base in found {
            let dir = if base.as_os_str().is_empty() { Path::new(".") } else { base.as_path() };
            let Ok(entries) = std::fs::read_dir(dir) else { continue };
            let mut names: Vec<String> =
                entries.flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect();
            names.sort();
            next.extend(names.into_iter().filter(|n| matches(part.as_bytes(), n.as_bytes())).map(|n| base.join(n)));
        }
        found = next;
    }
    Ok(found.into_iter().filter(|p| p.is_file()).collect())
}

/// Refuses a malformed pattern, as Go's `filepath.ErrBadPattern`.
fn check(p: &str) -> Result<(), String> {
    let bad = || Err(format!("syntax error in pattern {p:?}"));
    let b = p.as_bytes();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'\\' if i + 1 >= b.len() => return bad(),
            b'\\' => i += 1,
            b'[' => match b[i + 1..].iter().position(|&c| c == b']') {
                Some(0) | None => return bad(),
                Some(n) => i += n + 1,
            },
            _ => {}
        }
        i += 1;
    }
    Ok(())
}

/// Go's `filepath.Match` of one path element (`*` never crosses a `/`).
fn matches(p: &[u8], s: &[u8]) -> bool {
    match p.first() {
        None => s.is_empty(),
        Some(b'*') => (0..=s.len()).any(|i| matches(&p[1..], &s[i..])),
        Some(b'?') => !s.is_empty() && matches(&p[1..], &s[1..]),
        Some(b'[') => {
            let Some(end) = p[1..].iter().position(|&c| c == b']').map(|e| e + 1) else { return false };
            let Some(&c) = s.first() else { return false };
            let (neg, set) = match p[1] {
                b'^' => (true, &p[2..end]),
                _ => (false, &p[1..end]),
            };
            let mut hit = false;
            let mut j = 0;
            while j < set.len() {
                if j + 2 < set.len() && set[j + 1] == b'-' {
                    hit |= set[j] <= c && c <= set[j + 2];
                    j += 3;
                } else {
                    hit |= set[j] == c;
                    j += 1;
                }
            }
            hit != neg && matches(&p[end + 1..], &s[1..])
        }
        Some(b'\\') if p.len() > 1 => s.first() == Some(&p[1]) && matches(&p[2..], &s[1..]),
        Some(&c) => s.first() == Some(&c) && matches(&p[1..], &s[1..]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_match_as_go_does() {
        assert!(matches(b"*.tmpl", b"slack.tmpl"));
        assert!(!matches(b"*.tmpl", b"slack.tmpl.bak"));
        assert!(matches(b"[a-c]?.t*", b"b1.tmpl"));
        assert!(!matches(b"[^a-c]?.t*", b"b1.tmpl"));
        assert!(matches(b"a\\*", b"a*"));
        assert!(check("a[").is_err() && check("a\\").is_err() && check("[]").is_err());
        let dir = tempfile::tempdir().unwrap();
        for f in ["b.tmpl", "a.tmpl", "c.txt"] {
            std::fs::write(dir.path().join(f), "").unwrap();
        }
        std::fs::create_dir(dir.path().join("d.tmpl")).unwrap();
        let got = glob(&dir.path().join("*.tmpl")).unwrap();
        assert_eq!(got, [dir.path().join("a.tmpl"), dir.path().join("b.tmpl")]);
        assert!(glob(&dir.path().join("none/*.tmpl")).unwrap().is_empty());
    }
}
