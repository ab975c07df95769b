//! The alerting configuration alertd's tests start from, shared by the unit tests of `db` and
//! `engine` and by the timeline tests (each includes this file): Alertmanager's root-route timers
//! sending to `team`, the route tree below it given by the test, and two webhook receivers, `team`
//! and `pager`.

/// A configuration whose root route groups by `alertname` (group_wait 30s, group_interval 5m,
/// repeat_interval 1h; resolve_timeout and send_resolved are Alertmanager's defaults, 5m and true)
/// and sends to `team`; `routes` are the root's child routes in order, each a YAML flow mapping such
/// as `{matchers: ['host="h1"'], receiver: pager}`.
pub fn config(routes: &[&str]) -> String {
    let mut text = String::from(
        "route:\n  receiver: team\n  group_by: [alertname]\n  group_wait: 30s\n  group_interval: 5m\n  repeat_interval: 1h\n",
    );
    if !routes.is_empty() {
        text.push_str("  routes:\n");
        for r in routes {
            text.push_str(&format!("    - {r}\n"));
        }
    }
    text.push_str("receivers:\n");
    text.push_str("  - {name: team, webhook_configs: [{url: 'http://localhost:5001/'}]}\n");
    text.push_str("  - {name: pager, webhook_configs: [{url: 'http://localhost:5002/'}]}\n");
    text
}
