//! The collector's integration tests, one binary: the NVML path against the fake driver library and
//! workload attribution against real Kubernetes and Slurm interfaces.

mod attribution_podresources;
mod attribution_slurm;
mod nvml_fake;
