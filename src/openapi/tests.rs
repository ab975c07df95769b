use super::*;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn every_part() -> OpenApi {
    document(Parts { store: true, read_proxy: false, alertd: true, analyzer: true, demo: true })
}

/// `(METHOD, path)` of every operation in the document.
fn operations(doc: &OpenApi) -> BTreeSet<(String, String)> {
    let mut out = BTreeSet::new();
    for (path, item) in &doc.paths.paths {
        for (m, op) in [
            ("GET", &item.get),
            ("POST", &item.post),
            ("DELETE", &item.delete),
            ("PUT", &item.put),
            ("PATCH", &item.patch),
            ("HEAD", &item.head),
        ] {
            if op.is_some() {
                out.insert((m.to_string(), path.clone()));
            }
        }
    }
    out
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let p = e.expect("directory entry").path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") && p.file_name().is_some_and(|n| n != "tests.rs") {
            out.push(p);
        }
    }
}

/// `(METHOD, path)` of every `.route("path", …)` in the crates `argus serve` merges routers from: the
/// path literal and the method routers (`get(…)`, `.post(…)`, …) inside the call's parentheses.
fn routes_in_source() -> BTreeSet<(String, String, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    // alertd's routes are registered with utoipa-axum's `routes!`, which documents what it routes.
    for dir in ["src", "store/src", "analyzer/src"] {
        rust_files(&root.join(dir), &mut files);
    }
    let mut out = BTreeSet::new();
    for f in files {
        let text = std::fs::read_to_string(&f).expect("source file");
        let mut rest = text.as_str();
        while let Some(i) = rest.find(".route(") {
            let call = &rest[i + ".route(".len()..];
            let mut depth = 1;
            let end = call
                .char_indices()
                .find(|(_, c)| {
                    match c {
                        '(' => depth += 1,
                        ')' => depth -= 1,
                        _ => {}
                    }
                    depth == 0
                })
                .map_or(call.len(), |(j, _)| j);
            let args = &call[..end];
            let path = args.trim_start().strip_prefix('"').and_then(|s| s.split('"').next()).unwrap_or_else(|| {
                panic!("{}: a route whose path is not a string literal: .route({args}", f.display())
            });
            let at = format!("{}", f.strip_prefix(root).unwrap_or(&f).display());
            for m in ["get", "post", "put", "patch", "delete"] {
                let called = args
                    .match_indices(&format!("{m}("))
                    .any(|(j, _)| args[..j].chars().next_back().is_none_or(|c| !(c.is_alphanumeric() || c == '_')));
                if called {
                    out.insert((m.to_uppercase(), path.to_string(), at.clone()));
                }
            }
            rest = &call[end..];
        }
    }
    out
}

#[test]
fn every_route_served_is_in_the_document() {
    let doc = every_part();
    let ops = operations(&doc);
    let mut routes = routes_in_source();
    // The demo's notification receiver listens on a loopback port of its own, not on `argus serve`'s.
    assert!(routes.remove(&("POST".into(), "/".into(), "src/demo.rs".into())), "the demo receiver's route moved");
    // The scan itself works: it sees routes of every crate.
    for known in ["/api/v1/query", "/api/v1/anomalies", "/api/openapi.json"] {
        assert!(routes.iter().any(|(_, p, _)| p == known), "the source scan missed {known}: {routes:?}");
    }
    let missing: Vec<String> = routes
        .iter()
        .filter(|(m, p, _)| !ops.contains(&(m.clone(), p.clone())))
        .map(|(m, p, at)| format!("{m} {p} (routed in {at})"))
        .collect();
    assert!(
        missing.is_empty(),
        "routes served but not in /api/openapi.json; annotate their handlers with #[utoipa::path] and list \
         them in their crate's OpenApi: {missing:#?}"
    );
    let mut routed: BTreeSet<(String, String)> = routes.into_iter().map(|(m, p, _)| (m, p)).collect();
    routed.extend(operations(&argus_alertd::api::document()));
    let extra: Vec<_> = ops.difference(&routed).collect();
    assert!(extra.is_empty(), "operations in the document that no route serves: {extra:?}");
}

#[test]
fn operations_have_unique_ids_and_the_listener_rules() {
    let doc = every_part();
    let mut ids = BTreeSet::new();
    for (path, item) in &doc.paths.paths {
        for (m, op) in [(Method::GET, &item.get), (Method::POST, &item.post), (Method::DELETE, &item.delete)] {
            let Some(op) = op else { continue };
            let id = op.operation_id.clone().expect("operation id");
            assert!(ids.insert(id.clone()), "operation id {id} twice");
            let needs = auth::required(&m, path);
            let has_401 = op.responses.responses.contains_key("401");
            assert_eq!(has_401, needs.is_some(), "{m} {path}: 401 documented iff a scope is needed");
        }
    }
    // Open routes stay open, queries need read, silences the silence scope.
    let json = serde_json::to_value(&doc).expect("json");
    assert_eq!(json["paths"]["/-/healthy"]["get"]["security"], serde_json::json!([{}]));
    assert_eq!(json["paths"]["/api/openapi.json"]["get"]["security"], serde_json::json!([{}]));
    assert_eq!(json["paths"]["/api/v1/query"]["post"]["security"][0]["bearer"], serde_json::json!(["read"]));
    assert_eq!(json["paths"]["/api/v2/silences"]["post"]["security"][0]["bearer"], serde_json::json!(["silence"]));
    assert_eq!(
        json["paths"]["/api/v1/query"]["get"]["responses"]["401"]["content"]["application/json"]["schema"]["$ref"],
        "#/components/schemas/PromError"
    );
}

#[test]
fn parts_not_served_are_not_documented() {
    let doc = document(Parts { store: true, read_proxy: false, alertd: false, analyzer: false, demo: false });
    let ops = operations(&doc);
    assert!(ops.contains(&("GET".into(), "/api/v1/query".into())));
    assert!(
        !ops.iter().any(|(_, p)| p.starts_with("/api/v2/silence") || p == "/api/v1/anomalies" || p == "/api/v1/demo"),
        "{ops:?}"
    );
    // On a remote store: the read API passed through, and no ingest.
    let doc = document(Parts { store: false, read_proxy: true, alertd: false, analyzer: false, demo: false });
    let paths: BTreeSet<String> = operations(&doc).into_iter().map(|(_, p)| p).collect();
    for p in ["/api/v1/query", "/api/v1/query_range", "/api/v1/series", "/api/v1/labels", "/api/v1/label/{name}/values"]
    {
        assert!(paths.contains(p), "{p} not documented: {paths:?}");
    }
    assert!(!paths.iter().any(|p| p.contains("write") || p.contains("status/tsdb")), "{paths:?}");
}
