//! What alertd's integration tests share.

pub mod fixture;
