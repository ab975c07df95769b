//! Analyzer: detectors and forecasters. Not built yet; see ARCHITECTURE.md.
