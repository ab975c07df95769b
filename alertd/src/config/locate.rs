//! The line an error in a YAML file points at. Validation works on deserialised values, which keep no
//! positions, so the field an error names (`receivers[1].webhook_configs[0].timeout`) is looked up in
//! an index of where each key and list item of the document is written: the field when it is written,
//! else the nearest enclosing key or item that is (a missing field is reported on the section that
//! lacks it). Within that node's lines the offending text (a key or value), when given and found,
//! narrows it to one line; otherwise the node's first line is the answer. Only when the field is no
//! path of the document at all is the whole text searched.

use saphyr_parser::{Event, Parser};
use std::collections::HashMap;

/// The 1-based line for an error at `field` of the YAML document `src`; `needle` is the key or value
/// the error is about, searched for within the deepest written node of `field`.
pub(crate) fn line(src: &str, field: &str, needle: &str) -> Option<usize> {
    let index = Index::of(src);
    let mut path = field;
    loop {
        if let Some(&(first, last)) = index.nodes.get(path) {
            let lines = src.lines().skip(first - 1).take(last + 1 - first);
            return Some(search(lines, needle).map_or(first, |i| first + i));
        }
        match parent(path) {
            Some(p) => path = p,
            None => return search(src.lines(), needle).map(|i| i + 1),
        }
    }
}

/// The 0-based index of the first line whose text, after indentation and a list dash, starts with
/// `needle`; failing that, of the first line containing it.
pub(crate) fn search<'a>(lines: impl Iterator<Item = &'a str> + Clone, needle: &str) -> Option<usize> {
    if needle.is_empty() {
        return None;
    }
    let starts = lines.clone().position(|l| {
        let t = l.trim_start();
        let t = t.strip_prefix("- ").unwrap_or(t).trim_start();
        t.starts_with(needle)
    });
    starts.or_else(|| lines.clone().position(|l| l.contains(needle)))
}

/// Where each key and list item of a YAML document is written, for reports that point at a field
/// by line and column (`argus check-config --from-alertmanager`). Paths are spelt as validation
/// spells fields: `receivers[1].slack_configs[0].title`.
pub struct Positions {
    index: Index,
}

impl Positions {
    /// The index of the first document of `src`; what follows a syntax error is not indexed.
    pub fn of(src: &str) -> Positions {
        Positions { index: Index::of(src) }
    }

    /// The 1-based line and column of the key at `path` (of the item, for a list item).
    pub fn key(&self, path: &str) -> Option<(usize, usize)> {
        self.index.keys.get(path).copied()
    }

    /// The 1-based line and column where the value at `path` starts.
    pub fn value(&self, path: &str) -> Option<(usize, usize)> {
        self.index.values.get(path).copied()
    }

    /// The first and last line of the node at `path`.
    pub fn lines(&self, path: &str) -> Option<(usize, usize)> {
        self.index.nodes.get(path).copied()
    }

    /// The key at `path`, else at the nearest enclosing node that is written.
    pub fn nearest(&self, mut path: &str) -> Option<(usize, usize)> {
        loop {
            if let Some(p) = self.key(path) {
                return Some(p);
            }
            path = parent(path)?;
        }
    }
}

/// `a.b[2].c` → `a.b[2]` → `a.b` → `a` → none.
fn parent(path: &str) -> Option<&str> {
    let cut = path.rfind(['.', '['])?;
    (cut > 0).then(|| &path[..cut])
}

/// Where each mapping entry (`a.b`) and list item (`a[0]`) of the first document is written: its first
/// line (the key's, or the item's) and last line.
struct Index {
    nodes: HashMap<String, (usize, usize)>,
    /// Line and column of each node's key (or list item), and of its value.
    keys: HashMap<String, (usize, usize)>,
    values: HashMap<String, (usize, usize)>,
}

enum Frame {
    /// A mapping at `path`; `key` holds the entry whose value comes next, with its key's line and
    /// column.
    Map {
        path: String,
        key: Option<(String, usize, usize)>,
    },
    Seq {
        path: String,
        next: usize,
    },
}

impl Index {
    fn of(src: &str) -> Index {
        let mut ix = Index { nodes: HashMap::new(), keys: HashMap::new(), values: HashMap::new() };
        let mut stack: Vec<Frame> = Vec::new();
        let mut last_line = 1;
        for item in Parser::new_from_str(src) {
            // A document the parser refuses was refused by deserialisation first; what was read
            // before the error still locates fields.
            let Ok((event, span)) = item else { break };
            let (start, end) = (span.start.line(), span.end.line().max(span.start.line()));
            let col = span.start.col() + 1;
            match event {
                Event::DocumentEnd | Event::StreamEnd => break,
                Event::Scalar(text, ..) => {
                    if let Some(Frame::Map { key: key @ None, .. }) = stack.last_mut() {
                        *key = Some((text.into_owned(), start, col));
                    } else {
                        let path = ix.begin(&mut stack, start, col);
                        ix.finish(&mut stack, path, end);
                    }
                    last_line = end;
                }
                Event::Alias(_) => {
                    let path = ix.begin(&mut stack, start, col);
                    ix.finish(&mut stack, path, end);
                    last_line = end;
                }
                Event::MappingStart(..) | Event::SequenceStart(..) => {
                    let path = match stack.last_mut() {
                        // A mapping or list used as a key: rare and never a configuration field.
                        Some(Frame::Map { key: key @ None, .. }) => {
                            *key = Some(("?".into(), start, col));
                            "?".to_string()
                        }
                        _ => ix.begin(&mut stack, start, col),
                    };
                    stack.push(match event {
                        Event::MappingStart(..) => Frame::Map { path, key: None },
                        _ => Frame::Seq { path, next: 0 },
                    });
                    last_line = start;
                }
                Event::MappingEnd | Event::SequenceEnd => {
                    let path = match stack.pop() {
                        Some(Frame::Map { path, .. } | Frame::Seq { path, .. }) => path,
                        None => break,
                    };
                    ix.finish(&mut stack, path, last_line);
                }
                _ => {}
            }
        }
        ix
    }

    /// A value node starts at `line`, `col`: its path, with its first line recorded.
    fn begin(&mut self, stack: &mut [Frame], line: usize, col: usize) -> String {
        let (path, first, first_col) = match stack.last_mut() {
            None => (String::new(), line, col),
            Some(Frame::Map { path, key }) => {
                let (k, key_line, key_col) = key.clone().unwrap_or_default();
                (if path.is_empty() { k } else { format!("{path}.{k}") }, key_line, key_col)
            }
            Some(Frame::Seq { path, next }) => {
                *next += 1;
                (format!("{path}[{}]", *next - 1), line, col)
            }
        };
        self.nodes.insert(path.clone(), (first, line));
        self.keys.insert(path.clone(), (first, first_col));
        self.values.insert(path.clone(), (line, col));
        path
    }

    /// The value node at `path` ended on `line`; its mapping, if any, waits for the next key.
    fn finish(&mut self, stack: &mut [Frame], path: String, line: usize) {
        if let Some(node) = self.nodes.get_mut(&path) {
            node.1 = node.1.max(line);
        }
        if let Some(Frame::Map { key, .. }) = stack.last_mut() {
            *key = None;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::line;

    const DOC: &str = "\
route:
  receiver: a
  routes:
    - receiver: b
      matchers: ['x=\"1\"', 'y=~\"(\"']
    - receiver: c
receivers:
  - name: a
    webhook_configs:
      - url: http://a
        timeout: 10s
  - name: b
    webhook_configs:
      - url: http://b
      - url: http://b2
        timeout: 0s
        argus:
          signature_header: 'bad header'
";

    #[test]
    fn a_written_field_is_found_on_its_own_line_not_the_first_like_it() {
        assert_eq!(line(DOC, "receivers[1].webhook_configs[1].timeout", "timeout:"), Some(16));
        assert_eq!(line(DOC, "receivers[0].webhook_configs[0].timeout", "timeout:"), Some(11));
        assert_eq!(line(DOC, "receivers[1].webhook_configs[1].argus.signature_header", "signature_header:"), Some(18));
        assert_eq!(line(DOC, "route.routes[1].receiver", "receiver:"), Some(6));
        assert_eq!(line(DOC, "route.routes[0].matchers[1]", "y=~"), Some(5));
        assert_eq!(line(DOC, "receivers[1]", "name:"), Some(12));
    }

    #[test]
    fn a_missing_field_points_at_its_section_or_the_text_within_it() {
        // No `name` under routes[1]: the item's own line.
        assert_eq!(line(DOC, "route.routes[1].group_by", "group_by:"), Some(6));
        // Not written there, but the needle is inside the section.
        assert_eq!(line(DOC, "receivers[1].webhook_configs[0].timeout", "url: http://b"), Some(14));
        // Not a path at all: the whole text is searched.
        assert_eq!(line(DOC, "nothing", "receivers:"), Some(7));
        assert_eq!(line(DOC, "nothing", "absent"), None);
    }

    #[test]
    fn positions_name_the_line_and_column_of_keys_items_and_values() {
        let p = super::Positions::of(DOC);
        assert_eq!(p.key("receivers[1].webhook_configs[1].timeout"), Some((16, 9)));
        assert_eq!(p.value("receivers[1].webhook_configs[1].timeout"), Some((16, 18)));
        assert_eq!(p.key("route.routes[0].matchers[1]"), Some((5, 27)));
        assert_eq!(p.key("receivers[0]"), Some((8, 5)));
        assert_eq!(p.lines("receivers[1]"), Some((12, 18)));
        assert_eq!(p.nearest("receivers[0].webhook_configs[0].http_config.oauth2"), Some((10, 9)));
    }

    #[test]
    fn flow_style_and_quoted_keys_are_indexed() {
        let doc = "a: {b: 1, \"c\": [x, {d: 2}]}\ne:\n  f: 3\n";
        assert_eq!(line(doc, "a.c[1].d", "d:"), Some(1));
        assert_eq!(line(doc, "e.f", "f:"), Some(3));
    }
}
