//! InfiniBand and RoCE ports: `/sys/class/infiniband/<device>/ports/<port>/{counters,hw_counters}`.
//!
//! `counters/` holds the IBA PortCounters every HCA has (the kernel's
//! Documentation/ABI/stable/sysfs-class-infiniband); `hw_counters/` holds the driver's own, among them
//! mlx5's RoCE congestion counters (np_cnp_sent, np_ecn_marked_roce_packets, rp_cnp_handled) and
//! transport retries. Only the names below are read: a driver's other counters are not metrics we list.
//!
//! PFC pause frames are not here: mlx5 keeps them among ethtool's statistics (`rx_prio<N>_pause`,
//! `tx_prio<N>_pause`), which need the ethtool netlink API rather than sysfs.

use crate::batch::{Batch, Point};
use crate::source::SourceError;
use std::path::Path;

/// `counters/` file → field. `port_xmit_data` and `port_rcv_data` count 4-byte words (the "octets
/// divided by 4" of the IBA spec), so they are scaled to bytes.
const COUNTERS: &[(&str, &str, f64)] = &[
    ("port_xmit_data", "transmit_bytes_total", 4.0),
    ("port_rcv_data", "receive_bytes_total", 4.0),
    ("port_xmit_packets", "transmit_packets_total", 1.0),
    ("port_rcv_packets", "receive_packets_total", 1.0),
    ("port_rcv_errors", "receive_errors_total", 1.0),
    ("port_xmit_discards", "transmit_discards_total", 1.0),
    ("port_xmit_wait", "transmit_wait_total", 1.0),
    ("symbol_error", "symbol_errors_total", 1.0),
    ("link_downed", "link_downed_total", 1.0),
    ("link_error_recovery", "link_error_recovery_total", 1.0),
    ("local_link_integrity_errors", "local_link_integrity_errors_total", 1.0),
    ("excessive_buffer_overrun_errors", "excessive_buffer_overrun_errors_total", 1.0),
    ("port_rcv_remote_physical_errors", "receive_remote_physical_errors_total", 1.0),
    ("port_rcv_switch_relay_errors", "receive_switch_relay_errors_total", 1.0),
    ("port_rcv_constraint_errors", "receive_constraint_errors_total", 1.0),
    ("port_xmit_constraint_errors", "transmit_constraint_errors_total", 1.0),
    ("VL15_dropped", "vl15_dropped_total", 1.0),
];

/// `hw_counters/` file → field (mlx5 names; other drivers' files of the same name mean the same).
const HW_COUNTERS: &[(&str, &str)] = &[
    ("np_cnp_sent", "cnp_sent_total"),
    ("np_ecn_marked_roce_packets", "ecn_marked_roce_packets_total"),
    ("rp_cnp_handled", "cnp_handled_total"),
    ("rp_cnp_ignored", "cnp_ignored_total"),
    ("out_of_sequence", "out_of_sequence_total"),
    ("packet_seq_err", "packet_sequence_errors_total"),
    ("local_ack_timeout_err", "local_ack_timeout_errors_total"),
    ("implied_nak_seq_err", "implied_nak_sequence_errors_total"),
    ("rnr_nak_retry_err", "rnr_nak_retry_errors_total"),
    ("duplicate_request", "duplicate_requests_total"),
    ("roce_adp_retrans", "roce_adaptive_retransmits_total"),
    ("roce_adp_retrans_to", "roce_adaptive_retransmit_timeouts_total"),
    ("roce_slow_restart", "roce_slow_restarts_total"),
    ("out_of_buffer", "out_of_buffer_total"),
    ("req_cqe_error", "requester_cqe_errors_total"),
    ("resp_cqe_error", "responder_cqe_errors_total"),
];

/// Writes one `ib` point per port; false when there is no `/sys/class/infiniband`. A machine without
/// it has no ports: not an error.
pub(super) fn collect(class: &Path, now: i64, batch: &mut Batch) -> Result<bool, SourceError> {
    let devices = match std::fs::read_dir(class) {
        Ok(d) => d,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(SourceError::io(class, e)),
    };
    let mut devices: Vec<_> = devices.flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect();
    devices.sort();
    for device in devices {
        let ports_dir = class.join(&device).join("ports");
        let Ok(ports) = std::fs::read_dir(&ports_dir) else { continue };
        let mut ports: Vec<_> = ports.flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect();
        ports.sort();
        for port in ports {
            let dir = ports_dir.join(&port);
            let link_layer = read_trimmed(&dir.join("link_layer")).unwrap_or_default();
            let mut p = Point::new("ib", now).tag("device", &device).tag("port", &port).tag("link_layer", link_layer);
            // "4: ACTIVE" → 4; "5: LinkUp" → 5; "200 Gb/sec (4X HDR)" → 200e9.
            let state = read_trimmed(&dir.join("state")).and_then(|s| leading_number(&s));
            p = p.field_opt("port_state", state).field_opt("port_active", state.map(|s| f64::from(s == 4.0)));
            p = p.field_opt(
                "port_physical_state",
                read_trimmed(&dir.join("phys_state")).and_then(|s| leading_number(&s)),
            );
            let rate = read_trimmed(&dir.join("rate")).and_then(|s| leading_number(&s)).map(|g| g * 1e9);
            p = p.field_opt("port_rate_bits_per_second", rate);
            for (file, field, scale) in COUNTERS {
                p = p.field_opt(*field, read_number(&dir.join("counters").join(file)).map(|v| v * scale));
            }
            for (file, field) in HW_COUNTERS {
                p = p.field_opt(*field, read_number(&dir.join("hw_counters").join(file)));
            }
            batch.push(p);
        }
    }
    Ok(true)
}

fn read_trimmed(path: &Path) -> Option<String> {
    std::fs::read_to_string(path).ok().map(|s| s.trim().to_string())
}

/// A counter file; absent or unreadable files (a driver without that counter) give no field.
fn read_number(path: &Path) -> Option<f64> {
    read_trimmed(path)?.parse::<u64>().ok().map(|v| v as f64)
}

fn leading_number(s: &str) -> Option<f64> {
    let end = s.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(s.len());
    s[..end].parse().ok()
}
