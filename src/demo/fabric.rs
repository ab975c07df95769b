//! The demo host's fabric: InfiniBand and RoCE ports, and each GPU's NVLink.
//!
//! The traces have no network counters; these are derived plainly from the replayed GPU duty cycle:
//! the host's ports move bytes in proportion to its GPUs' summed activity, each GPU's NVLinks in
//! proportion to its own, credit waits and congestion notifications grow with the square of the load
//! beyond half, and error counters stay at zero (a healthy fabric). Labels are the collector's `net`
//! source's (`device`, `port`, `link_layer`) and `gpu` source's (`link`).

use super::counter::Counter;
use std::fmt::Write as _;

/// (device, link layer, link rate in bits per second).
const PORTS: [(&str, &str, f64); 2] = [("mlx5_0", "InfiniBand", 400e9), ("mlx5_1", "Ethernet", 200e9)];
/// Bytes a second a port sends at full load of every GPU, as a share of its link rate.
const PORT_LOAD: f64 = 0.6;
const NVLINKS: usize = 2;
/// Bytes a second one NVLink sends at full GPU load.
const NVLINK_BYTES: f64 = 18e9;

pub struct Fabric {
    /// Host load (mean duty cycle, 0–1) as a rate, and its congestion part.
    load: Counter,
    congestion: Counter,
    /// Each GPU's duty cycle, 0–1.
    gpus: Vec<Counter>,
}

impl Fabric {
    pub fn new(util: &[&[f64]]) -> Fabric {
        let n = util.first().map_or(0, |u| u.len());
        let load: Vec<f64> =
            (0..n).map(|m| util.iter().map(|u| u[m]).sum::<f64>() / util.len() as f64 / 100.0).collect();
        let congestion = load.iter().map(|l| ((l - 0.5).max(0.0) * 2.0).powi(2)).collect();
        Fabric {
            load: Counter::new(load),
            congestion: Counter::new(congestion),
            gpus: util.iter().map(|u| Counter::new(u.iter().map(|x| x / 100.0).collect())).collect(),
        }
    }

    /// The host's port and NVLink counters at `t`, counted from `origin`; GPU `g` stops moving data at
    /// `stopped[g]`.
    /// `gpus[g]` is GPU `g`'s measurement and tags (`gpu,cluster=…,gpu=g,…`).
    pub fn lines(&self, t: i64, origin: i64, host: &str, gpus: &[String], stopped: &[Option<i64>], out: &mut String) {
        let load = self.load.since(origin, t);
        let congestion = self.congestion.since(origin, t);
        for (device, layer, bits) in PORTS {
            let sent = load * bits / 8.0 * PORT_LOAD;
            let received = sent * 0.97;
            let labels = format!("cluster=demo,demo=true,host={host},device={device},port=1,link_layer={layer}");
            let _ = writeln!(
                out,
                "ib,{labels} port_state=4,port_active=1,port_rate_bits_per_second={bits},\
                 transmit_bytes_total={sent},receive_bytes_total={received},transmit_packets_total={},\
                 receive_packets_total={},receive_errors_total=0,transmit_wait_total={},\
                 symbol_errors_total=0,link_downed_total=0,cnp_sent_total={},\
                 ecn_marked_roce_packets_total={},local_ack_timeout_errors_total=0,out_of_sequence_total=0 {t}",
                (sent / 4096.0).floor(),
                (received / 4096.0).floor(),
                (congestion * 2e5).floor(),
                (congestion * 300.0).floor(),
                (congestion * 900.0).floor(),
            );
        }
        for (g, c) in self.gpus.iter().enumerate() {
            let until = stopped[g].map_or(t, |s| s.min(t));
            let sent = c.since(origin, until) * NVLINK_BYTES;
            for link in 0..NVLINKS {
                let _ = writeln!(
                    out,
                    "{},link={link} nvlink_active=1,\
                     nvlink_transmit_bytes_total={sent},nvlink_receive_bytes_total={},nvlink_replay_errors_total=0,\
                     nvlink_recovery_errors_total=0,nvlink_crc_errors_total=0 {t}",
                    gpus[g],
                    sent * 0.98
                );
            }
        }
    }
}
