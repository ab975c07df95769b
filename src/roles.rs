//! `argus serve --role …`: which parts of Argus one process runs. Every part that reads or writes
//! series does so through the store backend: the embedded store of this process (the `store` role), or
//! the remote one `[store] backend` names (another Argus's store role, VictoriaMetrics, Prometheus,
//! Mimir, Thanos). So the parts can run on separate machines, and several alertd replicas can receive
//! the alerts of every rules and analyzer process (`[server] alert_urls`).

use anyhow::{Result, bail};

/// One part of Argus, as `--role` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Role {
    /// The embedded store: ingest, the Prometheus query API, blocks and retention.
    Store,
    /// Rule evaluation: the rule files `argus.rules.files` names, and the built-in rules.
    Rules,
    /// Anomaly detection, forecasts and capacity plans.
    Analyzer,
    /// The notification pipeline and the Alertmanager API.
    Alertd,
    /// The node collector of this machine.
    Collector,
    /// Every part (the default).
    All,
}

/// The parts one process runs, resolved against the configured backend.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Roles {
    pub store: bool,
    pub rules: bool,
    pub analyzer: bool,
    pub alertd: bool,
    pub collector: bool,
}

impl Roles {
    /// The roles `--role` names (all when none), less the collector with `--no-collector`, checked
    /// against the backend: the store role is the embedded store, so it is left out when the
    /// configuration names a remote one (and refused when named explicitly), and the parts that read
    /// series need the store role or a remote backend.
    pub fn resolve(named: &[Role], no_collector: bool, remote: Option<&str>) -> Result<Roles> {
        let all = named.is_empty() || named.contains(&Role::All);
        let has = |r: Role| all || named.contains(&r);
        if let Some(backend) = remote
            && named.contains(&Role::Store)
        {
            bail!(
                "--role store runs the embedded store, but [store] backend names a remote one ({backend}); \
                 drop `store` from --role, or remove the remote backend"
            );
        }
        let roles = Roles {
            store: has(Role::Store) && remote.is_none(),
            rules: has(Role::Rules),
            analyzer: has(Role::Analyzer),
            alertd: has(Role::Alertd),
            collector: has(Role::Collector) && !no_collector,
        };
        if remote.is_none() && !roles.store && (roles.rules || roles.analyzer) {
            bail!(
                "--role {}: rules and the analyzer read and write series, and this process has no store: add \
                 `store` to --role, or set [store] backend to the store they should use (another Argus's store \
                 role with backend = \"prometheus\", VictoriaMetrics, Prometheus, …)",
                roles.names().join(",")
            );
        }
        if roles == Roles::none() {
            bail!("--role: nothing to run (with --no-collector, name at least one other role)");
        }
        Ok(roles)
    }

    fn none() -> Roles {
        Roles { store: false, rules: false, analyzer: false, alertd: false, collector: false }
    }

    /// The roles in `--role`'s spelling, for logs and errors.
    pub fn names(&self) -> Vec<&'static str> {
        let on = [
            (self.store, "store"),
            (self.rules, "rules"),
            (self.analyzer, "analyzer"),
            (self.alertd, "alertd"),
            (self.collector, "collector"),
        ];
        on.iter().filter(|(b, _)| *b).map(|(_, n)| *n).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(r: Result<Roles>) -> String {
        match r {
            Ok(r) => r.names().join(","),
            Err(e) => format!("error: {e}"),
        }
    }

    #[test]
    fn default_is_every_role_and_no_collector_removes_one() {
        assert_eq!(names(Roles::resolve(&[], false, None)), "store,rules,analyzer,alertd,collector");
        assert_eq!(names(Roles::resolve(&[Role::All], true, None)), "store,rules,analyzer,alertd");
        assert_eq!(names(Roles::resolve(&[Role::Alertd], false, None)), "alertd");
    }

    #[test]
    fn a_remote_backend_replaces_the_store_role() {
        let vm = Some("victoriametrics");
        assert_eq!(names(Roles::resolve(&[], false, vm)), "rules,analyzer,alertd,collector");
        let r = [Role::Rules, Role::Analyzer, Role::Alertd];
        assert_eq!(names(Roles::resolve(&r, true, vm)), "rules,analyzer,alertd");
        assert!(names(Roles::resolve(&[Role::Store], false, vm)).starts_with("error: --role store runs the embedded"));
    }

    #[test]
    fn readers_of_series_need_a_store() {
        let e = names(Roles::resolve(&[Role::Rules, Role::Analyzer], false, None));
        assert!(e.starts_with("error: --role rules,analyzer: rules and the analyzer read"), "{e}");
        assert!(names(Roles::resolve(&[Role::Collector], true, None)).starts_with("error: --role: nothing to run"));
    }
}
