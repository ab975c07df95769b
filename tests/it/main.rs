//! Argus' integration tests: one test binary whose modules each start `argus` (or a peer beside it)
//! and drive it from outside, as a user or a client would. `support` holds what they share.

mod support;

mod alertd_amtool;
mod alertd_cluster;
mod alertd_prometheus;
mod alertd_reload;
mod alertd_rules;
mod auth;
mod backup_restore;
mod check_config_migration;
mod clock_skew;
mod collect_once;
mod collector_outage;
mod crash;
mod dashboards;
mod deploy;
mod disk_full;
mod fuzz_corpus;
mod grafana_api;
mod helm_chart;
mod influxdb2_client;
mod ingest_api;
mod ingest_bad_input;
mod limits;
mod memory_budget;
mod openapi;
mod performance_page;
mod prometheus_remote_write;
mod promql_diff;
mod query_errors;
mod query_memory;
mod readme;
mod remote_backend;
mod roles;
mod rule_templates;
mod rule_unit_tests;
mod rules_api;
mod secrets;
mod self_monitoring;
mod serve_collector;
mod status_page;
mod tenancy;
mod tls;
