//! `net`: per-interface counters from /proc/net/dev and TCP/UDP counters from /proc/net/snmp
//! (measurement `net`), and InfiniBand/RoCE port counters from /sys/class/infiniband (measurement `ib`,
//! see `infiniband`).

use super::{Source, SourceError, parse_with};
use crate::batch::{Batch, Point};
use crate::config::NetSettings;
use procfs_core::net::{InterfaceDeviceStatus, Snmp};
use std::path::{Path, PathBuf};

mod infiniband;

pub struct Net {
    proc: PathBuf,
    sys: PathBuf,
    settings: NetSettings,
}

impl Net {
    pub fn new(procfs_root: &Path, sysfs_root: &Path, settings: NetSettings) -> Net {
        Net { proc: procfs_root.to_path_buf(), sys: sysfs_root.to_path_buf(), settings }
    }

    fn interfaces(&self, now: i64, batch: &mut Batch) -> Result<(), SourceError> {
        let dev: InterfaceDeviceStatus = parse_with(&self.proc.join("net/dev"))?;
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

    fn snmp(&self, now: i64, batch: &mut Batch) -> Result<(), SourceError> {
        let s: Snmp = parse_with(&self.proc.join("net/snmp"))?;
        batch.push(
            Point::new("net", now)
                .field("tcp_active_opens_total", s.tcp_active_opens as f64)
                .field("tcp_passive_opens_total", s.tcp_passive_opens as f64)
                .field("tcp_attempt_fails_total", s.tcp_attempt_fails as f64)
                .field("tcp_established_resets_total", s.tcp_estab_resets as f64)
                .field("tcp_current_established", s.tcp_curr_estab as f64)
                .field("tcp_in_segments_total", s.tcp_in_segs as f64)
                .field("tcp_out_segments_total", s.tcp_out_segs as f64)
                .field("tcp_retransmitted_segments_total", s.tcp_retrans_segs as f64)
                .field("tcp_in_errors_total", s.tcp_in_errs as f64)
                .field("tcp_out_resets_total", s.tcp_out_rsts as f64)
                .field("udp_in_datagrams_total", s.udp_in_datagrams as f64)
                .field("udp_out_datagrams_total", s.udp_out_datagrams as f64)
                .field("udp_no_ports_total", s.udp_no_ports as f64)
                .field("udp_in_errors_total", s.udp_in_errors as f64)
                .field("udp_receive_buffer_errors_total", s.udp_rcvbuf_errors as f64)
                .field("udp_send_buffer_errors_total", s.udp_sndbuf_errors as f64),
        );
        Ok(())
    }
}

impl Source for Net {
    fn name(&self) -> &'static str {
        "net"
    }

    fn collect(&mut self, now: i64, batch: &mut Batch) -> Result<(), SourceError> {
        let a = self.interfaces(now, batch);
        let b = self.snmp(now, batch);
        let c = infiniband::collect(&self.sys.join("class/infiniband"), now, batch);
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
