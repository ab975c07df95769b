//! The checks of a Prometheus 2.42 rule file: what Argus' rule loader refuses, what its query engine
//! cannot evaluate, and what evaluates differently. Each cites the sentence of Argus' docs it
//! implements.

use super::promql::{self, Name};
use super::templates::{self, Name as TemplateName};
use super::yaml::{Doc, entries, items, text};
use super::{Finding, Kind};
use serde_norway::Value;

/// docs/alerting.md, "Migrating Prometheus rules": "**Metric names**: rules written for node_exporter
/// or dcgm-exporter name their metrics; the collector's are listed in metrics.md", and its table.
const RENAMED: [(&str, &str); 14] = [
    ("node_cpu_seconds_total", "host_cpu_seconds_total{mode} (summed over CPUs, no cpu label)"),
    ("node_load1", "host_load1"),
    ("node_memory_MemAvailable_bytes", "host_memory_available_bytes"),
    ("node_memory_MemTotal_bytes", "host_memory_total_bytes"),
    ("node_filesystem_avail_bytes", "fs_avail_bytes"),
    ("node_filesystem_size_bytes", "fs_size_bytes"),
    ("node_disk_read_bytes_total", "disk_read_bytes_total"),
    ("node_disk_io_time_seconds_total", "disk_io_time_seconds_total"),
    ("node_network_receive_bytes_total", "net_receive_bytes_total{interface}"),
    ("node_infiniband_port_data_received_bytes_total", "ib_receive_bytes_total"),
    ("DCGM_FI_DEV_GPU_UTIL", "gpu_utilization_ratio (0–1, not %)"),
    ("DCGM_FI_DEV_FB_USED", "gpu_memory_used_bytes (bytes, not MiB)"),
    ("DCGM_FI_DEV_GPU_TEMP", "gpu_temperature_celsius"),
    ("DCGM_FI_DEV_XID_ERRORS", "increase(gpu_xid_errors_total[5m]) > 0, per code"),
];

/// docs/store.md: "Not supported, each answered `400` with a message naming it: native histograms and
/// their functions, Prometheus 3 additions the parser knows (`limitk`, `limit_ratio`, `info`,
/// `sort_by_label`, `ts_of_*`, fill modifiers)".
fn unsupported_function(f: &str) -> bool {
    (f.starts_with("histogram_") && f != "histogram_quantile")
        || f.starts_with("ts_of_")
        || matches!(f, "limitk" | "limit_ratio" | "info" | "sort_by_label" | "sort_by_label_desc")
}

/// Every finding for the rule file `src`, then whatever else Argus' rule loader refuses.
pub fn check(src: &str, file: &str) -> Result<Vec<Finding>, String> {
    let d = Doc::parse(src, file)?;
    let mut out = Vec::new();
    for (gi, g) in items(&d.root, "groups").iter().enumerate() {
        let at = format!("groups[{gi}]");
        // docs/alerting.md, "Migrating Prometheus rules": "**Group keys** `limit`, `query_offset`
        // and group `labels` are refused."
        let refused = [
            ("limit", "remove it: Argus keeps every alert and series a rule returns"),
            ("query_offset", "remove it, and write `offset` into each expr that needs one"),
            ("labels", "move these labels into each rule's labels"),
        ];
        for (key, todo) in refused {
            if g.get(key).is_some() {
                out.push(d.finding(Kind::Refused, &format!("{at}.{key}"), "group key not supported by Argus", todo));
            }
        }
        for (ri, r) in items(g, "rules").iter().enumerate() {
            rule(&d, &format!("{at}.rules[{ri}]"), r, &mut out);
        }
    }
    // An expr the query engine cannot run loads; blanking it would make it missing.
    let rest = d.without_refused(&out, |key| !key.ends_with(".expr"));
    let loaded = argus_alertd::rules::parse(&rest, file).map(|_| ());
    d.loader_errors(loaded, "see docs/alerting.md, \"Migrating Prometheus rules\"", &mut out);
    Ok(out)
}

fn rule(d: &Doc, at: &str, r: &Value, out: &mut Vec<Finding>) {
    if let Some(expr) = text(r, "expr") {
        expression(d, &format!("{at}.expr"), &expr, out);
    }
    for section in ["labels", "annotations"] {
        for (name, v) in entries(r, section) {
            let key = format!("{at}.{section}.{name}");
            let Some(t) = v.as_str() else { continue };
            // docs/alerting.md, "Rule templates": "an empty annotation is dropped where Prometheus
            // keeps it as `""`".
            if section == "annotations" && t.is_empty() {
                out.push(d.finding(
                    Kind::Differs,
                    &key,
                    "an empty annotation: Argus drops it where Prometheus keeps it as \"\"",
                    "remove it, or give it a value, if a receiver looks for the key",
                ));
            }
            rule_template(d, &key, t, out);
        }
    }
}

fn expression(d: &Doc, key: &str, expr: &str, out: &mut Vec<Finding>) {
    // What Argus' parser refuses, the rule loader reports; the names are read from what it accepts.
    if argus_store_api::promql::check(expr).is_err() {
        return;
    }
    let mut seen = Vec::new();
    for name in promql::names(expr) {
        if seen.contains(&name) {
            continue;
        }
        let finding = match &name {
            Name::Call(f) if unsupported_function(f) => Some((
                f,
                Kind::Refused,
                format!("Argus' query engine has no {f}(): the rule loads but every evaluation fails"),
                "rewrite it without this function, or keep the rule on Prometheus".to_string(),
            )),
            // docs/promql.md, "topk-ties": "Only the choice among exactly equal values differs".
            Name::Call(f) if f == "topk" || f == "bottomk" => Some((
                f,
                Kind::Differs,
                format!("among equal values {f} keeps the first series it meets, where Prometheus' choice varies from run to run"),
                "nothing to do unless the rule relies on which of several equal series is chosen".into(),
            )),
            // docs/promql.md: "Prometheus' `sinh`, `cosh` and `exp` come from Go's math package,
            // whose results on amd64 can differ from the correctly rounded values Argus returns by a
            // few parts in 10⁹."
            Name::Call(f) if matches!(f.as_str(), "sinh" | "cosh" | "exp") => Some((
                f,
                Kind::Differs,
                format!("{f}() is correctly rounded in Argus; Prometheus' may differ by a few parts in 10⁹"),
                "nothing to do unless a threshold sits on such a value exactly".into(),
            )),
            // docs/alerting.md: "**`up == 0`** has no meaning for pushed data: use the built-in
            // `HostDown` (tuned by `host_down_metric` and `host_down_after`), or `time() -
            // argus_host_last_seen_timestamp_seconds > 300`."
            Name::Metric(m) if m == "up" => Some((
                m,
                Kind::Differs,
                "collectors push to Argus, so there is no scrape and no up series for it".into(),
                "use the built-in HostDown (argus.rules.host_down), or time() - argus_host_last_seen_timestamp_seconds > 300".into(),
            )),
            Name::Metric(m) => renamed(m).map(|(what, todo)| (m, Kind::Differs, what, todo)),
            _ => None,
        };
        if let Some((needle, kind, what, todo)) = finding {
            out.push(d.finding_at(d.text_at(key, needle), kind, key, what, todo));
        }
        seen.push(name);
    }
}

/// A node_exporter or dcgm-exporter name, and Argus' for it.
fn renamed(m: &str) -> Option<(String, String)> {
    if let Some((_, ours)) = RENAMED.iter().find(|(theirs, _)| *theirs == m) {
        let todo = match m {
            // docs/alerting.md: "With `[collector.gpu] dcgm_names = true` the collector also writes
            // dcgm-exporter's names and labels, so DCGM rules run unchanged (except
            // `DCGM_FI_DEV_XID_ERRORS`, replaced by `gpu_xid_errors_total`)."
            "DCGM_FI_DEV_XID_ERRORS" => format!("use {ours}"),
            _ if m.starts_with("DCGM_") => format!("use {ours}, or set [collector.gpu] dcgm_names = true"),
            _ => format!("use {ours}"),
        };
        return Some((format!("{m} is not written by Argus' collector"), todo));
    }
    if m.starts_with("node_") {
        let what = format!("{m} is a node_exporter name, not written by Argus' collector");
        return Some((what, "use the collector's name for it (docs/metrics.md)".into()));
    }
    if m.starts_with("DCGM_") {
        let what = format!("{m} is a dcgm-exporter name, written by Argus' collector only with dcgm_names");
        return Some((
            what,
            "set [collector.gpu] dcgm_names = true, or use the collector's name (docs/metrics.md)".into(),
        ));
    }
    None
}

fn rule_template(d: &Doc, key: &str, t: &str, out: &mut Vec<Finding>) {
    // docs/alerting.md: "Copy Prometheus' `global.external_labels` and `--web.external-url` to
    // `argus.rules.external_labels` and `external_url` for `$externalLabels` and `$externalURL`
    // (empty without them)."
    let external = templates::names(t).into_iter().find_map(|n| match n {
        TemplateName::Var(v) if v == "externalLabels" || v == "externalURL" => Some(format!("${v}")),
        TemplateName::Field(f) if f == "ExternalLabels" || f == "ExternalURL" => Some(format!(".{f}")),
        _ => None,
    });
    if let Some(name) = external {
        out.push(d.finding_at(
            d.text_at(key, &name),
            Kind::Differs,
            key,
            format!(
                "{name} comes from argus.rules, not from Prometheus' flags and global section: empty until set there"
            ),
            "copy global.external_labels and --web.external-url to argus.rules.external_labels and external_url",
        ));
    }
    // docs/alerting.md, "Rule templates": "a query result printed whole (`{{ query "up" }}`) prints
    // its samples where Go prints memory addresses".
    if templates::prints_query_whole(t) {
        out.push(d.finding_at(
            d.text_at(key, "query"),
            Kind::Differs,
            key,
            "a query result printed whole: Argus prints its samples, Prometheus memory addresses",
            "print what you mean: {{ query \"…\" | first | value }}",
        ));
    }
}
