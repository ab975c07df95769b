//! `net`: per-interface counters from /proc/net/dev and TCP/UDP counters from /proc/net/snmp
//! (measurement `net`), and InfiniBand/RoCE port counters from /sys/class/infiniband (measurement `ib`,
//! see `infiniband`).

use super::procfile::ProcFile;
use super::{Source, SourceError};
use crate::batch::{Batch, Point};
use crate::config::NetSettings;
use procfs_core::net::InterfaceDeviceStatus;
use std::path::{Path, PathBuf};

mod infiniband;

/// How long a machine without `/sys/class/infiniband` goes before it is looked at again: an HCA
/// driver loaded after the collector started is found within this.
const IB_RECHECK: std::time::Duration = std::time::Duration::from_secs(60);

pub struct Net {
    /// Until when `/sys/class/infiniband` is known absent.
    ib_absent_until: Option<std::time::Instant>,
    dev: ProcFile,
    snmp: ProcFile,
    sys: PathBuf,
    settings: NetSettings,
}

impl Net {
    pub fn new(procfs_root: &Path, sysfs_root: &Path, settings: NetSettings) -> Net {
        Net {
            ib_absent_until: None,
            dev: ProcFile::new(procfs_root.join("net/dev")),
            snmp: ProcFile::new(procfs_root.join("net/snmp")),
            sys: sysfs_root.to_path_buf(),
            settings,
        }
    }

    fn interfaces(&mut self, now: i64, batch: &mut Batch) -> Result<(), SourceError> {
        let dev: InterfaceDeviceStatus = self.dev.parse()?;
        let mut names: Vec<_> = dev.0.keys().cloned().collect();
        names.sort();
        for name in names {
            let Some(d) = dev.0.get(&name) else { continue };
            if self.settings.interfaces_exclude.is_match(&name) {
                continue;
            }
            batch.push(
                Point::new("net", now)
                    .tag("interface", &name)
                    .field("receive_bytes_total", d.recv_bytes as f64)
                    .field("receive_packets_total", d.recv_packets as f64)
                    .field("receive_errors_total", d.recv_errs as f64)
                    .field("receive_drop_total", d.recv_drop as f64)
                    .field("receive_fifo_total", d.recv_fifo as f64)
                    .field("receive_frame_total", d.recv_frame as f64)
                    .field("receive_multicast_total", d.recv_multicast as f64)
                    .field("transmit_bytes_total", d.sent_bytes as f64)
                    .field("transmit_packets_total", d.sent_packets as f64)
                    .field("transmit_errors_total", d.sent_errs as f64)
                    .field("transmit_drop_total", d.sent_drop as f64)
                    .field("transmit_fifo_total", d.sent_fifo as f64)
                    .field("transmit_collisions_total", d.sent_colls as f64)
                    .field("transmit_carrier_total", d.sent_carrier as f64),
            );
        }
        Ok(())
    }

    fn snmp(&mut self, now: i64, batch: &mut Batch) -> Result<(), SourceError> {
        let path = self.snmp.path().to_path_buf();
        let text = self.snmp.read()?;
        let text = std::str::from_utf8(text).map_err(|e| SourceError::parse(&path, e))?;
        let tcp = section(text, "Tcp:").ok_or_else(|| SourceError::parse(&path, "no Tcp: lines"))?;
        let udp = section(text, "Udp:").ok_or_else(|| SourceError::parse(&path, "no Udp: lines"))?;
        let mut p = Point::new("net", now);
        for (from, name, field) in SNMP {
            let values = if *from == "Tcp:" { &tcp } else { &udp };
            p = p.field_opt(*field, values.iter().find(|(n, _)| n == name).map(|(_, v)| *v));
        }
        batch.push(p);
        Ok(())
    }
}

/// `/proc/net/snmp` counters written, by section and the kernel's name (RFC 1213's MIB names).
const SNMP: &[(&str, &str, &str)] = &[
    ("Tcp:", "ActiveOpens", "tcp_active_opens_total"),
    ("Tcp:", "PassiveOpens", "tcp_passive_opens_total"),
    ("Tcp:", "AttemptFails", "tcp_attempt_fails_total"),
    ("Tcp:", "EstabResets", "tcp_established_resets_total"),
    ("Tcp:", "CurrEstab", "tcp_current_established"),
    ("Tcp:", "InSegs", "tcp_in_segments_total"),
    ("Tcp:", "OutSegs", "tcp_out_segments_total"),
    ("Tcp:", "RetransSegs", "tcp_retransmitted_segments_total"),
    ("Tcp:", "InErrs", "tcp_in_errors_total"),
    ("Tcp:", "OutRsts", "tcp_out_resets_total"),
    ("Udp:", "InDatagrams", "udp_in_datagrams_total"),
    ("Udp:", "OutDatagrams", "udp_out_datagrams_total"),
    ("Udp:", "NoPorts", "udp_no_ports_total"),
    ("Udp:", "InErrors", "udp_in_errors_total"),
    ("Udp:", "RcvbufErrors", "udp_receive_buffer_errors_total"),
    ("Udp:", "SndbufErrors", "udp_send_buffer_errors_total"),
];

/// One section of `/proc/net/snmp`: its header line of names and the line of values after it, paired.
/// procfs-core parses every section into maps on each read; the 16 numbers above need only this (a
/// fifth of the net source's time on a profile). A name the kernel does not print is absent, not an
/// error: the field is then left out.
fn section<'a>(text: &'a str, prefix: &str) -> Option<Vec<(&'a str, f64)>> {
    let mut lines = text.lines().filter(|l| l.starts_with(prefix));
    let names = lines.next()?[prefix.len()..].split_ascii_whitespace();
    let values = lines.next()?[prefix.len()..].split_ascii_whitespace();
    Some(names.zip(values).filter_map(|(n, v)| Some((n, v.parse::<f64>().ok()?))).collect())
}

impl Source for Net {
    fn name(&self) -> &'static str {
        "net"
    }

    fn collect(&mut self, now: i64, batch: &mut Batch) -> Result<(), SourceError> {
        let a = self.interfaces(now, batch);
        let b = self.snmp(now, batch);
        let c = match self.ib_absent_until {
            Some(t) if std::time::Instant::now() < t => Ok(()),
            _ => infiniband::collect(&self.sys.join("class/infiniband"), now, batch).map(|found| {
                self.ib_absent_until = (!found).then(|| std::time::Instant::now() + IB_RECHECK);
            }),
        };
        a.and(b).and(c)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;
    use crate::source::golden;

    #[test]
    fn golden_net() {
        let settings = Config::default().validate("-").unwrap().net.unwrap().settings;
        let mut n = Net::new(&golden::fixture("node/proc"), &golden::fixture("infiniband/sys"), settings);
        let mut b = Batch::new();
        n.collect(1_000, &mut b).unwrap();
        golden::check("net", &b);
    }

    #[test]
    fn a_machine_without_infiniband_is_not_an_error() {
        let settings = Config::default().validate("-").unwrap().net.unwrap().settings;
        let mut n = Net::new(&golden::fixture("node/proc"), &golden::fixture("node/sys"), settings);
        let mut b = Batch::new();
        n.collect(1_000, &mut b).unwrap();
        assert!(b.points.iter().all(|p| p.measurement == "net"));
        assert!(b.to_exposition().contains(r#"net_receive_drop_total{interface="eth0"}"#));
    }
}
