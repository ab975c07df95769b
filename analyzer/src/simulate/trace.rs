//! Reading the Alibaba GPU pod trace (cluster-trace-gpu-v2023 columns) and its node inventory.
//!
//! Pods: `name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,
//! scheduled_time` (times in seconds; `scheduled_time` empty for pods the trace never scheduled). Nodes:
//! `sn,cpu_milli,memory_mib,gpu,model`. Columns are found by header name, so their order does not matter and
//! extra columns are ignored.

use std::io::Read;
use std::path::Path;

/// One pod of the trace, as the simulator replays it.
#[derive(Debug, Clone, PartialEq)]
pub struct Pod {
    pub name: String,
    /// Line in the trace file (1-based, the header is line 1).
    pub line: u64,
    pub cpu_milli: u64,
    pub memory_mib: u64,
    /// Whole GPUs asked for; 1 with `gpu_milli < 1000` is a share of one GPU.
    pub num_gpu: u32,
    /// Share of each GPU, in thousandths.
    pub gpu_milli: u32,
    /// GPU models the pod may run on; empty for any.
    pub gpu_spec: Vec<String>,
    /// qos `LS` (latency-sensitive): may preempt low-priority pods and use the reserved GPUs.
    pub high_priority: bool,
    /// Arrival, seconds.
    pub creation: i64,
    /// How long it runs once placed: `deletion_time - scheduled_time`, or `deletion_time - creation_time`
    /// for a pod the trace never scheduled (the time its owner kept it waiting).
    pub run_s: i64,
}

impl Pod {
    /// GPU share in thousandths of a GPU.
    pub fn gpu_share_milli(&self) -> u64 {
        u64::from(self.num_gpu) * u64::from(self.gpu_milli)
    }

    /// Takes a share of one GPU, packed with other shared pods.
    pub fn is_shared(&self) -> bool {
        self.num_gpu == 1 && self.gpu_milli < 1000
    }
}

/// One node of the inventory.
#[derive(Debug, Clone, PartialEq)]
pub struct NodeSpec {
    pub name: String,
    pub cpu_milli: u64,
    pub memory_mib: u64,
    pub gpus: u32,
    pub model: String,
}

/// A trace file that cannot be read, with the file, line and column at fault.
#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    // The causes are part of the message, not `source`s, so reports do not repeat them.
    #[error("{path}: {error}")]
    Io { path: String, error: std::io::Error },
    #[error("{path}:{line}: {error}")]
    Csv { path: String, line: u64, error: csv::Error },
    #[error("{path}:1: missing column `{column}`")]
    MissingColumn { path: String, column: &'static str },
    #[error("{path}:{line}: column `{column}`: {why}")]
    Field { path: String, line: u64, column: &'static str, why: String },
    #[error("{path}: no rows")]
    Empty { path: String },
}

/// Reads the pod list at `path`.
pub fn read_pods(path: &Path) -> Result<Vec<Pod>, TraceError> {
    let file = std::fs::File::open(path).map_err(|error| TraceError::Io { path: path.display().to_string(), error })?;
    parse_pods(&path.display().to_string(), file)
}

/// Reads the node inventory at `path`.
pub fn read_nodes(path: &Path) -> Result<Vec<NodeSpec>, TraceError> {
    let file = std::fs::File::open(path).map_err(|error| TraceError::Io { path: path.display().to_string(), error })?;
    parse_nodes(&path.display().to_string(), file)
}

/// Parses a pod list; `path` names it in errors.
pub fn parse_pods(path: &str, input: impl Read) -> Result<Vec<Pod>, TraceError> {
    let mut table = Table::new(path, input)?;
    let cols = [
        "name",
        "cpu_milli",
        "memory_mib",
        "num_gpu",
        "gpu_milli",
        "gpu_spec",
        "qos",
        "creation_time",
        "deletion_time",
        "scheduled_time",
    ];
    let idx = table.columns(&cols)?;
    let mut pods = Vec::new();
    while let Some(row) = table.next_row()? {
        let get = |i: usize| row.get(idx[i]).unwrap_or("").trim();
        let num_gpu: u32 = table.int(get(3), cols[3])?;
        let gpu_milli: u32 = table.int(get(4), cols[4])?;
        if num_gpu > 0 && !(1..=1000).contains(&gpu_milli) {
            return Err(table.field(cols[4], format!("`{gpu_milli}` is not a share of a GPU in 1..=1000")));
        }
        if num_gpu > 1 && gpu_milli != 1000 {
            return Err(table.field(cols[4], format!("`{gpu_milli}`: a GPU share below 1000 needs num_gpu 1")));
        }
        let creation: i64 = table.int(get(7), cols[7])?;
        let deletion: i64 = table.int(get(8), cols[8])?;
        let start = match get(9) {
            "" => creation,
            s => table.int(s, cols[9])?,
        };
        if start < creation {
            return Err(table.field(cols[9], format!("`{start}` is before creation_time {creation}")));
        }
        if deletion < start {
            return Err(table.field(cols[8], format!("`{deletion}` is before the pod started ({start})")));
        }
        let spec = get(5);
        pods.push(Pod {
            name: get(0).to_string(),
            line: table.line,
            cpu_milli: table.int(get(1), cols[1])?,
            memory_mib: table.int(get(2), cols[2])?,
            num_gpu,
            gpu_milli: if num_gpu == 0 { 0 } else { gpu_milli },
            gpu_spec: if spec.is_empty() || spec == "nan" {
                Vec::new()
            } else {
                spec.split('|').map(|m| m.trim().to_string()).collect()
            },
            high_priority: get(6) == "LS",
            creation,
            run_s: deletion - start,
        });
    }
    if pods.is_empty() {
        return Err(TraceError::Empty { path: path.to_string() });
    }
    Ok(pods)
}

/// Parses a node inventory; `path` names it in errors.
pub fn parse_nodes(path: &str, input: impl Read) -> Result<Vec<NodeSpec>, TraceError> {
    let mut table = Table::new(path, input)?;
    let cols = ["sn", "cpu_milli", "memory_mib", "gpu", "model"];
    let idx = table.columns(&cols)?;
    let mut nodes = Vec::new();
    while let Some(row) = table.next_row()? {
        let get = |i: usize| row.get(idx[i]).unwrap_or("").trim();
        nodes.push(NodeSpec {
            name: get(0).to_string(),
            cpu_milli: table.int(get(1), cols[1])?,
            memory_mib: table.int(get(2), cols[2])?,
            gpus: table.int(get(3), cols[3])?,
            model: get(4).to_string(),
        });
    }
    if nodes.is_empty() {
        return Err(TraceError::Empty { path: path.to_string() });
    }
    Ok(nodes)
}

/// A CSV file read row by row, knowing the line it is on.
struct Table<R> {
    path: String,
    reader: csv::Reader<R>,
    line: u64,
}

// === impl Table ===

impl<R: Read> Table<R> {
    fn new(path: &str, input: R) -> Result<Self, TraceError> {
        let reader = csv::ReaderBuilder::new().flexible(true).from_reader(input);
        Ok(Table { path: path.to_string(), reader, line: 1 })
    }

    /// Index of each of `names` in the header.
    fn columns(&mut self, names: &[&'static str]) -> Result<Vec<usize>, TraceError> {
        let header = match self.reader.headers() {
            Ok(h) => h.clone(),
            Err(e) => return Err(self.csv(e)),
        };
        names
            .iter()
            .map(|&n| {
                header
                    .iter()
                    .position(|h| h.trim() == n)
                    .ok_or(TraceError::MissingColumn { path: self.path.clone(), column: n })
            })
            .collect()
    }

    fn next_row(&mut self) -> Result<Option<csv::StringRecord>, TraceError> {
        let mut row = csv::StringRecord::new();
        match self.reader.read_record(&mut row) {
            Ok(false) => Ok(None),
            Ok(true) => {
                self.line = row.position().map_or(self.line + 1, |p| p.line());
                Ok(Some(row))
            }
            Err(e) => Err(self.csv(e)),
        }
    }

    fn int<T: std::str::FromStr>(&self, s: &str, column: &'static str) -> Result<T, TraceError> {
        s.parse().map_err(|_| {
            let what = if s.is_empty() { "empty".to_string() } else { format!("`{s}` is not an integer in range") };
            self.field(column, what)
        })
    }

    fn field(&self, column: &'static str, why: String) -> TraceError {
        TraceError::Field { path: self.path.clone(), line: self.line, column, why }
    }

    fn csv(&self, error: csv::Error) -> TraceError {
        let line = error.position().map_or(self.line, |p| p.line());
        TraceError::Csv { path: self.path.clone(), line, error }
    }
}
