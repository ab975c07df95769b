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
    /// The route's own identity, which keys its aggregation groups: the parent's id, `/`, and this
    /// route's matchers, plus `/` and the sibling index when an earlier sibling has the same matchers
    /// (Alertmanager's `Route.ID()` appends the index to every child; appending it only on a
    /// collision keeps the id equal to the key otherwise, so state persisted under keys still applies).
    pub id: String,
}

impl Route {
    /// Builds a node, computing its key and id from the parent's; `add_child` settles the id among
    /// siblings.
    pub fn new(parent: Option<&Route>, mut matchers: Vec<Matcher>, continue_: bool, opts: RouteOpts) -> Route {
        matchers.sort_by(|a, b| (&a.name, a.to_string()).cmp(&(&b.name, b.to_string())));
        let own = format!("{{{}}}", matchers.iter().map(|m| m.to_string()).collect::<Vec<_>>().join(","));
        let (key, id) = match parent {
            Some(p) => (format!("{}/{own}", p.key), format!("{}/{own}", p.id)),
            None => (own.clone(), own),
        };
        Route { matchers, continue_, opts, routes: Vec::new(), key, id }
    }

    /// Appends a child built with `Route::new(Some(self), …)`, giving it (and its subtree) a distinct
    /// id when an earlier sibling has the same matchers.
    pub fn add_child(&mut self, mut child: Route) {
        if self.routes.iter().any(|s| s.id == child.id) {
            let old = child.id.clone();
            let new = format!("{old}/{}", self.routes.len());
            child.rebase_id(&old, &new);
        }
        self.routes.push(child);
    }

    fn rebase_id(&mut self, old: &str, new: &str) {
        if let Some(rest) = self.id.strip_prefix(old) {
            self.id = format!("{new}{rest}");
        }
        for c in &mut self.routes {
            c.rebase_id(old, new);
        }
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
