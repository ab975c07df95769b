//! Node collector: sources → batches → sinks. Not built yet; see ARCHITECTURE.md.
