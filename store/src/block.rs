//! Immutable blocks: the compressed, persistent part of the store. A block holds every series'
//! samples for one time range in compressed chunks, an index of its series (read in place from its
//! mapped file), and its events.
//! Format: docs/format/block.md.

pub mod cache;
mod reader;
mod writer;

pub use cache::{Cached, ChunkCache};
pub use reader::{Block, Scratch};
pub use writer::{BlockWriter, Lineage, write_block};

use serde::{Deserialize, Serialize};

/// Samples per chunk at most: large enough for pco to compress well, small enough that a short read
/// decodes little it does not need.
pub const MAX_CHUNK_SAMPLES: usize = 4096;

const INDEX_MAGIC: &[u8; 4] = b"ARGI";
const CHUNKS_MAGIC: &[u8; 4] = b"ARGC";
const EVENTS_MAGIC: &[u8; 4] = b"ARGE";
const FORMAT_VERSION: u8 = 1;
/// The index's own version: 2 is read in place (docs/format/block.md); a version 1 index (loaded
/// whole onto the heap by older releases) is rewritten as version 2 when its block is opened.
const INDEX_VERSION: u8 = 2;
/// Bytes of the index's table of contents, just before its CRC: seven u64.
const INDEX_TOC_LEN: usize = 7 * 8;
const FILE_HEADER_LEN: usize = 8;

/// `meta.json` of a block.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Meta {
    pub version: u8,
    /// Unique, names the directory (`b-<id>`).
    pub id: u64,
    /// Priority: where blocks overlap, the sample of the higher `seq` wins.
    pub seq: u64,
    /// Inclusive bounds of the samples and events inside, in milliseconds.
    pub min_time: i64,
    pub max_time: i64,
    pub series: u64,
    pub samples: u64,
    pub chunks: u64,
    pub events: u64,
    /// 0 for a block cut from the head; one more than its highest source for a compacted block.
    pub level: u32,
    /// The `id` of every block this one replaces (empty for a block cut from the head). At open, a
    /// block listed here by another is a leftover of an interrupted compaction and is deleted.
    pub sources: Vec<u64>,
}

/// Where a chunk lies in the chunks file, and the time range it covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChunkMeta {
    pub min_time: i64,
    pub max_time: i64,
    pub offset: u64,
    pub len: u32,
    /// CRC32 of the chunk's bytes: chunk payloads carry no checksum of their own.
    pub crc: u32,
}

#[derive(Debug, thiserror::Error)]
pub enum BlockError {
    #[error("block io on {path}: {source}")]
    Io { path: std::path::PathBuf, source: std::io::Error },
    #[error("corrupt block file {path}: {reason}")]
    Corrupt { path: std::path::PathBuf, reason: String },
}

fn io(path: &std::path::Path) -> impl FnOnce(std::io::Error) -> BlockError + '_ {
    move |source| BlockError::Io { path: path.to_path_buf(), source }
}

fn file_header(magic: &[u8; 4]) -> [u8; FILE_HEADER_LEN] {
    let mut h = [0u8; FILE_HEADER_LEN];
    h[..4].copy_from_slice(magic);
    h[4] = FORMAT_VERSION;
    h
}

#[cfg(test)]
mod tests;
