//! Slurm labels of GPU series against a real controller (`argus_testkit::slurm::Cluster`: munged and
//! slurmctld on loopback, as the test's user; no slurmd, so jobs submitted held stay pending, which is
//! enough for `scontrol show job`). The GPU's processes are in a fixture proc tree whose cgroup files
//! name the jobs slurmctld gave, in the cgroup v1 and v2 layouts. Skipped, saying why, where Slurm is
//! not installed (a failure under CI).

use argus_collector::config::{AttributionSettings, Families, Kubernetes, SlurmSettings};
use argus_collector::source::gpu::attribution::{self, Attribution, GpuRef};
use argus_testkit::slurm::{Cluster, INSTALL};
use std::path::Path;
use std::time::{Duration, Instant};

const GPU: GpuRef<'static> = GpuRef { uuid: "GPU-5e1b8d3a-97c2-4f4e-b1a7-1c0d6e3f2a10", index: Some(0) };

/// `/proc/<pid>/cgroup` under `root`.
fn process(root: &Path, pid: u32, cgroup: &str) {
    std::fs::create_dir_all(root.join(pid.to_string())).unwrap();
    std::fs::write(root.join(pid.to_string()).join("cgroup"), cgroup).unwrap();
}

/// The labels of `GPU` used by `pids`, as text; the call must return at once.
fn labels(a: &Attribution, proc: &Path, pids: &[u32]) -> String {
    let owners = attribution::owners(proc, pids.iter().copied());
    let start = Instant::now();
    let l = a.labels(GPU, &owners);
    let took = start.elapsed();
    assert!(took < Duration::from_millis(50), "labels() took {took:?}: a collection must never wait for scontrol");
    l.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(" ")
}

/// Polls until the labels of `pids` have a `slurm_user` (every 20 ms, for at most 20 s).
fn resolved(a: &Attribution, proc: &Path, pids: &[u32], cluster: &Cluster) -> String {
    let start = Instant::now();
    loop {
        let l = labels(a, proc, pids);
        if l.contains("slurm_user=") {
            return l;
        }
        assert!(start.elapsed() < Duration::from_secs(20), "no slurm_user in 20s: {l}\n{}", cluster.logs());
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn gpu_series_get_the_user_and_partition_of_the_one_slurm_job_using_the_gpu() {
    let scontrol =
        argus_testkit::program("scontrol", INSTALL).and_then(|s| argus_testkit::program("sbatch", INSTALL).map(|_| s));
    let up = scontrol.and_then(|s| {
        Cluster::start_with("PartitionName=debug Nodes=gpu-node-08 MaxTime=INFINITE State=UP\n").map(|c| (s, c))
    });
    let (scontrol, mut cluster) = match up {
        Ok(x) => x,
        Err(missing) => return argus_testkit::missing_peer(&missing),
    };
    let me = String::from_utf8(std::process::Command::new("id").arg("-un").output().unwrap().stdout).unwrap();
    let me = me.trim();
    // Root may submit for another user: the job's user is then not the one running the collector.
    let (other_user, other_args): (&str, &[&str]) =
        if me == "root" { ("nobody", &["-p", "debug", "--uid=nobody"]) } else { (me, &["-p", "debug"]) };
    let job_a = cluster.submit_held(&[]);
    let job_b = cluster.submit_held(other_args);
    let job_c = cluster.submit_held(&[]);

    let dir = tempfile::tempdir().unwrap();
    let proc = dir.path();
    process(
        proc,
        100,
        &format!(
            "12:memory:/slurm/uid_0/job_{job_a}/step_0/task_0\n1:name=systemd:/system.slice/slurmd.service\n0::/\n"
        ),
    );
    process(proc, 101, &format!("0::/system.slice/slurmstepd.scope/job_{job_a}/step_0/user/task_1\n"));
    process(proc, 200, &format!("0::/system.slice/slurmstepd.scope/job_{job_b}/step_batch/user/task_0\n"));
    process(proc, 300, "0::/system.slice/slurmstepd.scope/job_999999/step_0/user/task_0\n");
    process(proc, 400, &format!("0::/system.slice/slurmstepd.scope/job_{job_c}/step_0/user/task_0\n"));
    process(proc, 500, "0::/user.slice/user-1000.slice/session-3.scope\n");

    let settings = AttributionSettings {
        kubernetes: Kubernetes::Off,
        timeout: Duration::from_secs(10),
        slurm: Some(SlurmSettings {
            scontrol,
            slurm_conf: Some(cluster.conf().to_path_buf()),
            cache_ttl: Duration::from_secs(300),
        }),
        families: Families::all(),
        ..AttributionSettings::default()
    };
    let a = Attribution::new(&settings);

    // The first collection has the job from the cgroups (v1 and v2) alone; the controller's answer
    // follows. A process outside any job does not count.
    assert_eq!(labels(&a, proc, &[100, 101, 500]), format!("slurm_job={job_a}"));
    assert_eq!(
        resolved(&a, proc, &[100, 101, 500], &cluster),
        format!("slurm_job={job_a} slurm_user={me} slurm_partition=gpu")
    );
    assert_eq!(
        resolved(&a, proc, &[200], &cluster),
        format!("slurm_job={job_b} slurm_user={other_user} slurm_partition=debug")
    );
    // Two jobs on one GPU: no Slurm labels.
    assert_eq!(labels(&a, proc, &[100, 200]), "");

    // A job the controller does not know keeps its id alone, once scontrol has answered for it.
    let lookups = a.slurm_status().unwrap().lookups;
    assert_eq!(labels(&a, proc, &[300]), "slurm_job=999999");
    wait_for("the lookup of job 999999", &a, &cluster, |s| s.lookups > lookups);
    assert_eq!(labels(&a, proc, &[300]), "slurm_job=999999");
    let status = a.slurm_status().unwrap();
    assert_eq!((status.failures, status.error, status.cached), (0, None, 3), "not found is an answer");

    // The controller stops: known jobs keep their labels from the cache; a job not asked yet fails
    // to resolve, and keeps its id alone.
    cluster.stop();
    assert_eq!(labels(&a, proc, &[101]), format!("slurm_job={job_a} slurm_user={me} slurm_partition=gpu"));
    assert_eq!(labels(&a, proc, &[400]), format!("slurm_job={job_c}"));
    wait_for("a failed lookup", &a, &cluster, |s| s.failures > 0);
    let error = a.slurm_status().unwrap().error.unwrap();
    assert!(
        error.contains(&format!("-o show job {job_c}: exit status: 1: "))
            && error.contains("Unable to contact slurm controller"),
        "{error}"
    );
    assert_eq!(labels(&a, proc, &[400]), format!("slurm_job={job_c}"));
    assert_eq!(labels(&a, proc, &[200]), format!("slurm_job={job_b} slurm_user={other_user} slurm_partition=debug"));
}

/// Polls the lookups' status until `f` holds (every 20 ms, for at most 20 s).
fn wait_for(what: &str, a: &Attribution, cluster: &Cluster, f: impl Fn(&attribution::SlurmStatus) -> bool) {
    let start = Instant::now();
    loop {
        let status = a.slurm_status().unwrap();
        if f(&status) {
            return;
        }
        assert!(start.elapsed() < Duration::from_secs(20), "{what}: not within 20s: {status:?}\n{}", cluster.logs());
        std::thread::sleep(Duration::from_millis(20));
    }
}
