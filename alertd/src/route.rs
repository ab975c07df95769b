//! The routing tree: which receivers an alert goes to, and how it is grouped there.

use argus_model::{Labels, Matcher};
use std::time::Duration;

/// What a route does with the alerts it takes; children inherit unset options from their parent.
#[derive(Debug, Clone, PartialEq)]
pub struct RouteOpts {
    pub receiver: String,
    pub group_by: GroupBy,
    pub group_wait: Duration,
    pub group_interval: Duration,
    pub repeat_interval: Duration,
    pub mute_time_intervals: Vec<String>,
    pub active_time_intervals: Vec<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum GroupBy {
    /// `group_by: ['...']`: every label, so each alert is its own group.
    All,
    Labels(Vec<String>),
}

#[derive(Debug, Clone)]
pub struct Route {
    pub matchers: Vec<Matcher>,
    pub continue_: bool,
    pub opts: RouteOpts,
    pub routes: Vec<Route>,
    /// Alertmanager's route key: the parent's key, `/`, and this route's matchers, e.g.
    /// `{}/{severity="critical"}`. The first part of a group key.
    pub key: String,
}

impl Route {
    /// Builds a node, computing its key from the parent's.
    pub fn new(parent_key: Option<&str>, mut matchers: Vec<Matcher>, continue_: bool, opts: RouteOpts) -> Route {
        matchers.sort_by(|a, b| (&a.name, a.to_string()).cmp(&(&b.name, b.to_string())));
        let own = format!("{{{}}}", matchers.iter().map(|m| m.to_string()).collect::<Vec<_>>().join(","));
        let key = match parent_key {
            Some(p) => format!("{p}/{own}"),
            None => own,
        };
        Route { matchers, continue_, opts, routes: Vec::new(), key }
    }

    /// Alertmanager's `Route.Match`: the deepest matching routes. The first matching child ends the
    /// search unless it has `continue`; a node none of whose children match is itself the match.
    pub fn match_labels(&self, labels: &Labels) -> Vec<&Route> {
        if !self.matchers.iter().all(|m| m.matches(labels.get(&m.name).unwrap_or(""))) {
            return Vec::new();
        }
        let mut all = Vec::new();
        for child in &self.routes {
            let found = child.match_labels(labels);
            let matched = !found.is_empty();
            all.extend(found);
            if matched && !child.continue_ {
                break;
            }
        }
        if all.is_empty() {
            all.push(self);
        }
        all
    }

    /// The labels an alert is grouped by on this route.
    pub fn group_labels(&self, labels: &Labels) -> Labels {
        match &self.opts.group_by {
            GroupBy::All => labels.clone(),
            GroupBy::Labels(names) => {
                Labels::from_pairs(names.iter().filter_map(|n| labels.get(n).map(|v| (n.clone(), v.to_string()))))
            }
        }
    }

    /// Every node, depth first, root first.
    pub fn walk(&self) -> Vec<&Route> {
        let mut out = vec![self];
        for c in &self.routes {
            out.extend(c.walk());
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use crate::config;
    use argus_model::Labels;
    use expect_test::expect;

    #[test]
    fn first_match_and_continue() {
        let cfg = config::parse(
            r#"
route:
  receiver: default
  group_by: [alertname]
  routes:
    - matchers: ['severity="critical"']
      receiver: pager
      continue: true
    - matchers: ['team=~"gpu|net"']
      receiver: gpu-team
      group_by: ['...']
    - matchers: ['team="gpu"']
      receiver: never
receivers: [{name: default}, {name: pager}, {name: gpu-team}, {name: never}]
"#,
            "t.yml",
        )
        .unwrap();
        let show = |pairs: &[(&str, &str)]| {
            cfg.route
                .match_labels(&Labels::from_pairs(pairs.iter().copied()))
                .iter()
                .map(|r| format!("{} ({})", r.opts.receiver, r.key))
                .collect::<Vec<_>>()
                .join(", ")
        };
        expect![[r#"pager ({}/{severity="critical"}), gpu-team ({}/{team=~"gpu|net"})"#]]
            .assert_eq(&show(&[("severity", "critical"), ("team", "gpu")]));
        expect!["default ({})"].assert_eq(&show(&[("team", "db")]));
        expect![[r#"gpu-team ({}/{team=~"gpu|net"})"#]].assert_eq(&show(&[("team", "net")]));
    }
}
