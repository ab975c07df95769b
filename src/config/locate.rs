//! Where in argus.toml the field a validation error names is written. Validation works on
//! deserialised values, which keep no positions, so the error's field path (`store.remote.url`,
//! `collector.sink[1].url`, `analyzer.rules[0].metric`) is looked up in the file parsed with
//! `toml_edit`, which keeps every key's and table's span: the key's own position when it is written,
//! else the nearest enclosing key, table header or array item that is (a missing key is reported on
//! the table that lacks it), else 1:1.

use std::ops::Range;
use toml_edit::{Document, Item, Table, Value};

/// 1-based line and column for an error whose text starts with a field path (`path: reason` or
/// `path reason`).
pub(super) fn locate(text: &str, error: &str) -> (usize, usize) {
    let path = error.split([':', ' ']).next().unwrap_or("");
    match Document::parse(text) {
        Ok(doc) => deepest(doc.as_table(), path).map_or((1, 1), |span| line_col(text, span.start)),
        Err(_) => (1, 1),
    }
}

/// 1-based line and column of byte `offset`.
pub(super) fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let col = before.len() - before.rfind('\n').map_or(0, |p| p + 1) + 1;
    (line, col)
}

#[derive(Clone, Copy)]
enum Node<'a> {
    Table(&'a Table),
    Item(&'a Item),
    Value(&'a Value),
}

enum Step<'p> {
    Key(&'p str),
    Index(usize),
}

/// `a.b[2].c` → key a, key b, index 2, key c.
fn steps(path: &str) -> Vec<Step<'_>> {
    let mut out = Vec::new();
    for part in path.split('.') {
        let (key, mut rest) = part.split_at(part.find('[').unwrap_or(part.len()));
        if !key.is_empty() {
            out.push(Step::Key(key));
        }
        while let Some(r) = rest.strip_prefix('[') {
            let Some((i, after)) = r.split_once(']') else { break };
            match i.parse() {
                Ok(i) => out.push(Step::Index(i)),
                Err(_) => out.push(Step::Key(i.trim_matches('"'))),
            }
            rest = after;
        }
    }
    out
}

/// The span of the deepest written part of `path`: a key where the step is a key, the item where
/// it is an index, and the header of a `[table]` or the first `[[array.of.tables]]`.
fn deepest(root: &Table, path: &str) -> Option<Range<usize>> {
    let mut node = Node::Table(root);
    let mut best = None;
    for step in steps(path) {
        let next: Option<(Option<Range<usize>>, Node)> = match (node, step) {
            (Node::Table(t), Step::Key(k)) | (Node::Item(Item::Table(t)), Step::Key(k)) => {
                t.get_key_value(k).map(|(key, item)| {
                    // A `[table]` is found at its header, not at its name inside the header.
                    let header = match item {
                        Item::Table(t) if !t.is_dotted() => t.span(),
                        Item::ArrayOfTables(a) => a.get(0).and_then(|t| t.span()).or_else(|| a.span()),
                        _ => None,
                    };
                    (header.or_else(|| key.span()).or_else(|| item.span()), Node::Item(item))
                })
            }
            (Node::Item(Item::Value(v)), step) | (Node::Value(v), step) => child(v, step),
            (Node::Item(Item::ArrayOfTables(a)), Step::Index(i)) => a.get(i).map(|t| (t.span(), Node::Table(t))),
            _ => None,
        };
        let Some((span, n)) = next else { break };
        best = span.or(best);
        node = n;
    }
    best
}

fn child<'a>(v: &'a Value, step: Step) -> Option<(Option<Range<usize>>, Node<'a>)> {
    match (v, step) {
        (Value::InlineTable(t), Step::Key(k)) => t.get_key_value(k).map(|(key, item)| {
            let span = key.span().or_else(|| item.span());
            match item {
                Item::Value(v) => (span, Node::Value(v)),
                other => (span, Node::Item(other)),
            }
        }),
        (Value::Array(a), Step::Index(i)) => a.get(i).map(|v| (v.span(), Node::Value(v))),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::locate;

    const TEXT: &str = r#"[server]
listen = "127.0.0.1:9700"

[store]
retention = "35d"
remote = { url = "http://vm:8428", timeout = "0s" }

[[collector.sink]]
url = "http://a"

[[collector.sink]]
url = "http://b"
spool_max_bytes = "1parsec"

[[analyzer.rules]]
metric = "gpu_utilization_ratio"
by = ["cluster", "host"]
"#;

    #[test]
    fn a_written_key_is_found_where_it_is_written() {
        assert_eq!(locate(TEXT, "store.retention: bad"), (5, 1));
        assert_eq!(locate(TEXT, "collector.sink[1].spool_max_bytes: unknown unit"), (13, 1));
        assert_eq!(locate(TEXT, "collector.sink[1].url: bad"), (12, 1));
        assert_eq!(locate(TEXT, "store.remote.timeout: must be more than zero"), (6, 36));
        assert_eq!(locate(TEXT, "analyzer.rules[0].by[1]: unknown label"), (17, 18));
        assert_eq!(locate(TEXT, "server.listen \"x\" is not an address"), (2, 1));
        assert_eq!(locate(TEXT, "server: bad"), (1, 1));
        assert_eq!(locate(TEXT, "collector.sink: bad"), (8, 1));
        assert_eq!(locate("[store.remote]\nurl = \"x\"\n", "store.remote: only read"), (1, 1));
        assert_eq!(locate("[store]\nremote.url = \"x\"\n", "store.remote.url: bad"), (2, 8));
    }

    #[test]
    fn a_missing_key_points_at_the_table_that_lacks_it() {
        assert_eq!(locate(TEXT, "collector.sink[0].spool_max_bytes: missing"), (8, 1));
        assert_eq!(locate(TEXT, "analyzer.rules[0].direction: missing"), (15, 1));
        assert_eq!(locate(TEXT, "auth.tokens: missing"), (1, 1));
    }
}
