//! The line protocol through its public API: InfluxDB's reference examples, encode/parse round trips,
//! and (ignored by default) a parse throughput measurement.

mod lineprotocol {
    mod reference;
    mod roundtrip;
    mod throughput;
}
