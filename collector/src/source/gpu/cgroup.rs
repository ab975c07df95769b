//! Who owns a process: its container, Kubernetes pod and Slurm job, read from `/proc/<pid>/cgroup`.
//!
//! The paths name them in a few known shapes (cgroup v1 and v2, cgroupfs and systemd drivers):
//! - Kubernetes: `/kubepods/burstable/pod<uid>/<container>` or
//!   `/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod<uid_with_underscores>.slice/cri-containerd-<container>.scope`
//! - Docker: `/docker/<container>` or `/system.slice/docker-<container>.scope`
//! - Slurm: `/slurm/uid_<n>/job_<id>/step_<s>` or `/system.slice/slurmstepd.scope/job_<id>/step_<s>`

use procfs_core::FromRead;
use procfs_core::ProcessCGroups;
use std::path::Path;

#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct Owner {
    pub container_id: Option<String>,
    pub pod_uid: Option<String>,
    pub slurm_job: Option<String>,
    /// Set by the caller for processes with no other owner.
    pub pid: Option<u32>,
}

impl Owner {
    pub fn is_empty(&self) -> bool {
        self.container_id.is_none() && self.pod_uid.is_none() && self.slurm_job.is_none()
    }
}

/// The owner of `pid`; empty when the process is gone or runs outside any container or job.
pub fn owner(procfs_root: &Path, pid: u32) -> Owner {
    match ProcessCGroups::from_file(procfs_root.join(pid.to_string()).join("cgroup")) {
        Ok(groups) => groups.0.iter().map(|g| from_path(&g.pathname)).find(|o| !o.is_empty()).unwrap_or_default(),
        Err(_) => Owner::default(),
    }
}

/// Reads the owner out of one cgroup path.
pub fn from_path(path: &str) -> Owner {
    let mut o = Owner::default();
    for part in path.split('/') {
        let part = part.strip_suffix(".scope").or_else(|| part.strip_suffix(".slice")).unwrap_or(part);
        if let Some(job) = part.strip_prefix("job_") {
            o.slurm_job = Some(job.to_string());
        } else if let Some(i) = part.rfind("pod") {
            // "pod<uid>" (cgroupfs) or "kubepods-burstable-pod<uid_with_underscores>" (systemd).
            let uid = &part[i + 3..];
            if (part.starts_with("pod") || part.starts_with("kubepods"))
                && uid.len() >= 32
                && uid.chars().all(|c| c.is_ascii_hexdigit() || c == '-' || c == '_')
            {
                o.pod_uid = Some(uid.replace('_', "-"));
            }
        }
        let id = part.rsplit(['-', ':']).next().unwrap_or(part);
        if id.len() == 64 && id.chars().all(|c| c.is_ascii_hexdigit()) {
            o.container_id = Some(id.to_string());
        }
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;
    use expect_test::{Expect, expect};

    fn check(path: &str, expected: Expect) {
        expected.assert_debug_eq(&from_path(path));
    }

    /// Every process of tests/fixtures/cgroup/proc, as `pid: owner`.
    #[test]
    fn owners_from_a_fixture_proc_tree() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/cgroup/proc");
        let mut pids: Vec<u32> =
            std::fs::read_dir(&root).unwrap().filter_map(|e| e.unwrap().file_name().to_str()?.parse().ok()).collect();
        pids.sort();
        let lines: Vec<String> = pids
            .iter()
            .map(|&pid| {
                let o = owner(&root, pid);
                let short = |s: Option<String>| s.map_or("-".to_string(), |s| s.chars().take(12).collect());
                format!(
                    "{pid}: job={} pod={} container={}",
                    short(o.slurm_job),
                    short(o.pod_uid),
                    short(o.container_id)
                )
            })
            .collect();
        expect![[r#"
            7001: job=1234 pod=- container=-
            7002: job=1234 pod=- container=-
            7003: job=1234 pod=- container=-
            7004: job=5678 pod=- container=-
            7005: job=- pod=- container=-
            7006: job=- pod=0f3c2a1e-8b7 container=4c1bd5a1b5f3"#]]
        .assert_eq(&lines.join("\n"));
        // A process that is gone has no owner.
        assert!(owner(&root, 1).is_empty());
    }

    #[test]
    fn owners_from_paths() {
        let c = "4c1bd5a1b5f3a7cbd7e2e9c33e2a0a7b0f6d3f6a2e1d5c4b3a29181716151413";
        check(
            &format!(
                "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod0f3c2a1e_8b7d_4c6e_9f1a_2b3c4d5e6f70.slice/cri-containerd-{c}.scope"
            ),
            expect![[r#"
                Owner {
                    container_id: Some(
                        "4c1bd5a1b5f3a7cbd7e2e9c33e2a0a7b0f6d3f6a2e1d5c4b3a29181716151413",
                    ),
                    pod_uid: Some(
                        "0f3c2a1e-8b7d-4c6e-9f1a-2b3c4d5e6f70",
                    ),
                    slurm_job: None,
                    pid: None,
                }
            "#]],
        );
        check(
            &format!("/kubepods/besteffort/pod0f3c2a1e-8b7d-4c6e-9f1a-2b3c4d5e6f70/{c}"),
            expect![[r#"
                Owner {
                    container_id: Some(
                        "4c1bd5a1b5f3a7cbd7e2e9c33e2a0a7b0f6d3f6a2e1d5c4b3a29181716151413",
                    ),
                    pod_uid: Some(
                        "0f3c2a1e-8b7d-4c6e-9f1a-2b3c4d5e6f70",
                    ),
                    slurm_job: None,
                    pid: None,
                }
            "#]],
        );
        check(
            "/system.slice/slurmstepd.scope/job_4242/step_0/user/task_0",
            expect![[r#"
                Owner {
                    container_id: None,
                    pod_uid: None,
                    slurm_job: Some(
                        "4242",
                    ),
                    pid: None,
                }
            "#]],
        );
        check(
            "/slurm/uid_1000/job_77/step_batch",
            expect![[r#"
            Owner {
                container_id: None,
                pod_uid: None,
                slurm_job: Some(
                    "77",
                ),
                pid: None,
            }
        "#]],
        );
        check(
            &format!("/system.slice/docker-{c}.scope"),
            expect![[r#"
            Owner {
                container_id: Some(
                    "4c1bd5a1b5f3a7cbd7e2e9c33e2a0a7b0f6d3f6a2e1d5c4b3a29181716151413",
                ),
                pod_uid: None,
                slurm_job: None,
                pid: None,
            }
        "#]],
        );
        check(
            "/user.slice/user-1000.slice/session-3.scope",
            expect![[r#"
            Owner {
                container_id: None,
                pod_uid: None,
                slurm_job: None,
                pid: None,
            }
        "#]],
        );
    }
}
