//! alertd: rule evaluation and the notification pipeline. Not built yet; see ARCHITECTURE.md.
