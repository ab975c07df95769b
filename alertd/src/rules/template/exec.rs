//! Runs a parsed template over its data: Go text/template's `exec`, with the value model of
//! [`super::value`]. Errors carry the byte offset and text of the command that failed, as Go's
//! "executing … at <…>" messages do.

use super::QueryFn;
use super::funcs::{self, Dialect};
use super::parse::{Arg, Cmd, Node, Pipe};
use super::value::{Value, sorted_pairs};
use std::collections::BTreeMap;
use std::rc::Rc;
use std::sync::Arc;

/// A failure while running a template: where (byte offset and the command's text) and why.
#[derive(Debug, Clone, PartialEq)]
pub struct ExecError {
    pub pos: usize,
    pub context: String,
    pub msg: String,
    /// The named template it failed in (`pos` is then in that template's text), None for the
    /// text being run.
    pub inside: Option<(String, Arc<Def>)>,
}

/// A named template (`define`, `block`) and the text it was parsed from, for error positions.
#[derive(Debug, Clone, PartialEq)]
pub struct Def {
    pub nodes: Vec<Node>,
    /// The file it came from (its base name, as Go names a parsed file).
    pub file: String,
    pub text: Arc<str>,
}

/// Named templates by name.
pub type Defs = BTreeMap<String, Arc<Def>>;

/// How deep `{{template}}` calls may nest, so that a template that includes itself fails rather
/// than overflowing the stack. Go allows 100000 (its stacks grow); real templates nest a few levels
/// (Alertmanager's defaults three), and 100 fits a 2 MiB thread stack in a debug build.
const MAX_DEPTH: usize = 100;

enum Flow {
    Normal,
    Break,
    Continue,
}

pub struct State<'q> {
    vars: Vec<(String, Value)>,
    pub query: &'q mut dyn QueryFn,
    external_url: &'q str,
    out: String,
    /// A guard against runaway recursion of nested `range`s over huge results.
    steps: usize,
    dialect: Dialect,
    defs: &'q Defs,
    depth: usize,
    /// HTML output (an email's `html`): what actions print is HTML-escaped, as html/template
    /// escapes it in text.
    html: bool,
}

/// How many nodes one expansion may run: ample for any alert template, small enough that a
/// template ranging over a large query result cannot stall rule evaluation.
const MAX_STEPS: usize = 1_000_000;

/// Runs `nodes` with `dot` and the variables `vars` (`$` first), appending to a new string.
pub fn run<'q>(
    nodes: &[Node],
    dot: &Value,
    vars: Vec<(String, Value)>,
    query: &'q mut dyn QueryFn,
    external_url: &'q str,
) -> Result<String, ExecError> {
    static NONE: Defs = BTreeMap::new();
    let mut s = State {
        vars,
        query,
        external_url,
        out: String::new(),
        steps: 0,
        dialect: Dialect::Rules,
        defs: &NONE,
        depth: 0,
        html: false,
    };
    s.walk(dot, nodes)?;
    Ok(s.out)
}

/// Runs a notification template: `nodes` with `dot` (also `$`), `{{template}}` finding `defs`;
/// `html` escapes what actions print.
pub fn run_notify(nodes: &[Node], dot: &Value, defs: &Defs, html: bool) -> Result<String, ExecError> {
    let mut query = super::NoQuery;
    let vars = vec![("$".to_string(), dot.clone())];
    let mut s = State {
        vars,
        query: &mut query,
        external_url: "",
        out: String::new(),
        steps: 0,
        dialect: Dialect::Notify,
        defs,
        depth: 0,
        html,
    };
    s.walk(dot, nodes)?;
    Ok(s.out)
}

impl State<'_> {
    fn walk(&mut self, dot: &Value, nodes: &[Node]) -> Result<Flow, ExecError> {
        for n in nodes {
            self.steps += 1;
            if self.steps > MAX_STEPS {
                let msg = "template runs too long".into();
                return Err(ExecError { pos: 0, context: String::new(), msg, inside: None });
            }
            let flow = match n {
                Node::Text(t) => {
                    self.out.push_str(t);
                    Flow::Normal
                }
                Node::Action(p) => {
                    let v = self.pipe(dot, p, true)?;
                    if p.decl.is_empty() {
                        let printed = v.print_action();
                        // `safeHtml` marks its text as HTML; `html` has escaped it already.
                        let safe = matches!(
                            p.cmds.last().and_then(|c| c.args.first()),
                            Some(Arg::Func(f)) if f == "safeHtml" || f == "html"
                        );
                        if self.html && !safe {
                            self.out.push_str(&funcs::html_text_escape(&printed));
                        } else {
                            self.out.push_str(&printed);
                        }
                    }
                    Flow::Normal
                }
                Node::If { pipe, then, els } => {
                    let mark = self.vars.len();
                    let v = self.pipe(dot, pipe, true)?;
                    let flow = if v.truth() { self.walk(dot, then)? } else { self.walk(dot, els)? };
                    self.vars.truncate(mark);
                    flow
                }
                Node::With { pipe, body, els } => {
                    let mark = self.vars.len();
                    let v = self.pipe(dot, pipe, true)?;
                    let flow = if v.truth() { self.walk(&v, body)? } else { self.walk(dot, els)? };
                    self.vars.truncate(mark);
                    flow
                }
                Node::Range { pipe, body, els } => self.range(dot, pipe, body, els)?,
                Node::Break => return Ok(Flow::Break),
                Node::Continue => return Ok(Flow::Continue),
                Node::Template { name, pipe, pos } => {
                    self.template(dot, name, pipe.as_ref(), *pos)?;
                    Flow::Normal
                }
            };
            if !matches!(flow, Flow::Normal) {
                return Ok(flow);
            }
        }
        Ok(Flow::Normal)
    }

    /// `{{template "name" pipeline}}`: the named template with the pipeline's value as dot and `$`,
    /// and no other variables.
    fn template(&mut self, dot: &Value, name: &str, pipe: Option<&Pipe>, pos: usize) -> Result<(), ExecError> {
        let context = match pipe {
            Some(p) => format!("{{{{template {} {p}}}}}", super::fmt::go_quote(name)),
            None => format!("{{{{template {}}}}}", super::fmt::go_quote(name)),
        };
        let Some(def) = self.defs.get(name).cloned() else {
            return Err(ExecError { pos, context, msg: format!("template {name:?} not defined"), inside: None });
        };
        if self.depth >= MAX_DEPTH {
            let msg = format!("exceeded maximum template depth ({MAX_DEPTH})");
            return Err(ExecError { pos, context, msg, inside: None });
        }
        let arg = match pipe {
            Some(p) => {
                let mark = self.vars.len();
                let v = self.pipe(dot, p, false)?;
                self.vars.truncate(mark);
                v
            }
            None => Value::Nil,
        };
        let vars = std::mem::replace(&mut self.vars, vec![("$".to_string(), arg.clone())]);
        self.depth += 1;
        let result = self.walk(&arg, &def.nodes);
        self.depth -= 1;
        self.vars = vars;
        result.map(|_| ()).map_err(|mut e| {
            if e.inside.is_none() {
                e.inside = Some((name.to_string(), def.clone()));
            }
            e
        })
    }

    fn range(&mut self, dot: &Value, pipe: &Pipe, body: &[Node], els: &[Node]) -> Result<Flow, ExecError> {
        let mark = self.vars.len();
        let v = self.pipe(dot, pipe, false)?;
        let items: Vec<(Value, Value)> = match &v {
            Value::Labels(m) | Value::Kv(m) => {
                m.iter().map(|(k, v)| (Value::Str(k.clone()), Value::Str(v.clone()))).collect()
            }
            Value::Alerts(a, _) => {
                a.iter().enumerate().map(|(i, x)| (Value::Int(i as i64), Value::Alert(x.clone()))).collect()
            }
            Value::Pairs(p) => {
                p.iter().enumerate().map(|(i, x)| (Value::Int(i as i64), Value::Pair(Rc::new(x.clone())))).collect()
            }
            Value::Strings(v) => {
                v.iter().enumerate().map(|(i, x)| (Value::Int(i as i64), Value::Str(x.clone()))).collect()
            }
            Value::Map(m) => m.iter().map(|(k, v)| (Value::Str(k.clone()), v.clone())).collect(),
            Value::Samples(s) => {
                s.iter().enumerate().map(|(i, x)| (Value::Int(i as i64), Value::Sample(x.clone()))).collect()
            }
            Value::Int(n) => (0..*n).map(|i| (Value::Int(i), Value::Int(i))).collect(),
            Value::Nil => Vec::new(),
            other => {
                let msg = format!("range can't iterate over {}", other.go_string());
                return Err(ExecError { pos: pipe.pos, context: pipe.to_string(), msg, inside: None });
            }
        };
        if items.is_empty() {
            let flow = self.walk(dot, els)?;
            self.vars.truncate(mark);
            return Ok(flow);
        }
        for (key, elem) in items {
            let inner = self.vars.len();
            match pipe.decl.as_slice() {
                [] => {}
                [e] => self.bind(e, elem.clone(), pipe.assign),
                [k, e, ..] => {
                    self.bind(k, key, pipe.assign);
                    self.bind(e, elem.clone(), pipe.assign);
                }
            }
            let flow = self.walk(&elem, body)?;
            if !pipe.assign {
                self.vars.truncate(inner);
            }
            if matches!(flow, Flow::Break) {
                break;
            }
        }
        self.vars.truncate(mark);
        Ok(Flow::Normal)
    }

    fn bind(&mut self, name: &str, v: Value, assign: bool) {
        if assign {
            if let Some(slot) = self.vars.iter_mut().rev().find(|(n, _)| n == name) {
                slot.1 = v;
            }
        } else {
            self.vars.push((name.to_string(), v));
        }
    }

    /// A pipeline's value; `declare` binds its variables (a `range` binds them per element).
    fn pipe(&mut self, dot: &Value, pipe: &Pipe, declare: bool) -> Result<Value, ExecError> {
        let mut v = None;
        for cmd in &pipe.cmds {
            v = Some(self.cmd(dot, cmd, v)?);
        }
        let v = v.unwrap_or(Value::Nil);
        if declare {
            for d in &pipe.decl {
                self.bind(d, v.clone(), pipe.assign);
            }
        }
        Ok(v)
    }

    fn cmd(&mut self, dot: &Value, cmd: &Cmd, piped: Option<Value>) -> Result<Value, ExecError> {
        let err = |msg: String| ExecError { pos: cmd.pos, context: cmd.to_string(), msg, inside: None };
        let first = &cmd.args[0];
        if let Arg::Func(name) = first {
            return self.call(dot, name, &cmd.args[1..], piped).map_err(err);
        }
        if cmd.args.len() > 1 || piped.is_some() {
            // `.KV.Remove .Names`, `.StartsAt.Format "…"`: a method called with arguments.
            if let Arg::Field(fs) | Arg::Var(_, fs) | Arg::Pipe(_, fs) = first
                && let Some((method, path)) = fs.split_last()
            {
                let receiver = match first {
                    Arg::Field(_) => fields(dot.clone(), path),
                    Arg::Var(v, _) => self.arg(dot, &Arg::Var(v.clone(), path.to_vec())),
                    Arg::Pipe(p, _) => self.arg(dot, &Arg::Pipe(p.clone(), path.to_vec())),
                    _ => unreachable!("matched above"),
                }
                .map_err(err)?;
                let mut args = Vec::with_capacity(cmd.args.len());
                for a in &cmd.args[1..] {
                    args.push(self.arg(dot, a).map_err(err)?);
                }
                args.extend(piped);
                return method_call(&receiver, method, args).map_err(err);
            }
            return Err(err(format!("can't give argument to non-function {first}")));
        }
        self.arg(dot, first).map_err(err)
    }

    fn arg(&mut self, dot: &Value, arg: &Arg) -> Result<Value, String> {
        match arg {
            Arg::Field(fs) => fields(dot.clone(), fs),
            Arg::Var(name, fs) => {
                let v = self.vars.iter().rev().find(|(n, _)| n == name).map(|(_, v)| v.clone());
                fields(v.ok_or(format!("undefined variable: {name}"))?, fs)
            }
            Arg::Pipe(p, fs) => {
                let mark = self.vars.len();
                let v = self.pipe(dot, p, true).map_err(|e| e.msg)?;
                self.vars.truncate(mark);
                fields(v, fs)
            }
            Arg::Func(name) => self.call(dot, name, &[], None),
            Arg::Str(s, _) => Ok(Value::Str(s.clone())),
            Arg::Int(i, _) => Ok(Value::Int(*i)),
            Arg::Float(f, _) => Ok(Value::Float(*f)),
            Arg::Bool(b) => Ok(Value::Bool(*b)),
            Arg::Nil => Ok(Value::Nil),
        }
    }

    fn call(&mut self, dot: &Value, name: &str, args: &[Arg], piped: Option<Value>) -> Result<Value, String> {
        // `and` and `or` evaluate their operands only as far as they need (Go 1.18 on).
        if name == "and" || name == "or" {
            let n = args.len() + usize::from(piped.is_some());
            if n == 0 {
                return Err(format!("wrong number of args for {name}: want at least 1 got 0"));
            }
            let mut last = Value::Nil;
            for a in args {
                last = self.arg(dot, a)?;
                if last.truth() != (name == "and") {
                    return Ok(last);
                }
            }
            if let Some(p) = piped {
                last = p;
            }
            return Ok(last);
        }
        let mut values = Vec::with_capacity(args.len() + 1);
        for a in args {
            values.push(self.arg(dot, a)?);
        }
        values.extend(piped);
        funcs::call(self.dialect, name, values, self.query, self.external_url)
    }
}

/// `.A.B…` on a value: the data's and a sample's fields, and map keys (a missing label is the
/// empty string, as with Prometheus' `missingkey=zero`; a missing `args` entry is no value).
fn fields(mut v: Value, fs: &[String]) -> Result<Value, String> {
    for f in fs {
        v = match &v {
            Value::Root(r) => match f.as_str() {
                "Labels" => Value::Labels(r.labels.clone()),
                "ExternalLabels" => Value::Labels(r.external_labels.clone()),
                "ExternalURL" => Value::Str(r.external_url.clone()),
                "Value" => Value::Float(r.value),
                _ => return Err(format!("can't evaluate field {f} in type {}", v.type_name())),
            },
            Value::Sample(s) => match f.as_str() {
                "Labels" => Value::Labels(s.labels.clone()),
                "Value" => Value::Float(s.value),
                _ => return Err(format!("can't evaluate field {f} in type *template.sample")),
            },
            Value::Labels(m) => Value::Str(m.get(f).cloned().unwrap_or_default()),
            Value::Map(m) => m.get(f).cloned().unwrap_or(Value::Nil),
            Value::Data(d) => match f.as_str() {
                "Receiver" => Value::Str(d.receiver.clone()),
                "Status" => Value::Str(d.status.clone()),
                "Alerts" => Value::Alerts(d.alerts.clone(), true),
                "GroupLabels" => Value::Kv(d.group_labels.clone()),
                "CommonLabels" => Value::Kv(d.common_labels.clone()),
                "CommonAnnotations" => Value::Kv(d.common_annotations.clone()),
                "ExternalURL" => Value::Str(d.external_url.clone()),
                _ => return Err(format!("can't evaluate field {f} in type {}", v.type_name())),
            },
            Value::Alert(a) => match f.as_str() {
                "Status" => Value::Str(a.status.clone()),
                "Labels" => Value::Kv(a.labels.clone()),
                "Annotations" => Value::Kv(a.annotations.clone()),
                "StartsAt" => Value::Time(a.starts_at),
                "EndsAt" => Value::Time(a.ends_at),
                "GeneratorURL" => Value::Str(a.generator_url.clone()),
                "Fingerprint" => Value::Str(a.fingerprint.clone()),
                _ => return Err(format!("can't evaluate field {f} in type {}", v.type_name())),
            },
            Value::Pair(p) => match f.as_str() {
                "Name" => Value::Str(p.0.clone()),
                "Value" => Value::Str(p.1.clone()),
                _ => return Err(format!("can't evaluate field {f} in type {}", v.type_name())),
            },
            // A method of the type comes before a key of the map, as in Go.
            Value::Kv(m) if !matches!(f.as_str(), "SortedPairs" | "Names" | "Values" | "Remove") => {
                Value::Str(m.get(f).cloned().unwrap_or_default())
            }
            Value::Kv(_) | Value::Alerts(..) | Value::Pairs(_) | Value::Time(_) => method_call(&v, f, Vec::new())?,
            Value::Nil => return Err(format!("nil pointer evaluating interface {{}}.{f}")),
            other => return Err(format!("can't evaluate field {f} in type {}", other.type_name())),
        };
    }
    Ok(v)
}

/// The methods of Alertmanager's data types that templates call (`KV.SortedPairs`, `Alerts.Firing`,
/// …) and of `time.Time` (`Format`, `Unix`, `UTC`, `Local`, `String`; alertd's times are UTC).
fn method_call(recv: &Value, name: &str, args: Vec<Value>) -> Result<Value, String> {
    let want = |n: usize| {
        if args.len() == n {
            Ok(())
        } else {
            Err(format!("wrong number of args for {name}: want {n} got {}", args.len()))
        }
    };
    let strings = |v: Vec<String>| Value::Strings(Rc::new(v));
    Ok(match (recv, name) {
        (Value::Kv(m), "SortedPairs") => {
            want(0)?;
            Value::Pairs(Rc::new(sorted_pairs(m)))
        }
        (Value::Kv(m), "Names") => {
            want(0)?;
            strings(sorted_pairs(m).into_iter().map(|p| p.0).collect())
        }
        (Value::Kv(m), "Values") => {
            want(0)?;
            strings(sorted_pairs(m).into_iter().map(|p| p.1).collect())
        }
        (Value::Kv(m), "Remove") => {
            want(1)?;
            let keys: Vec<String> = match &args[0] {
                Value::Strings(k) => k.to_vec(),
                Value::Nil => Vec::new(),
                v => return Err(format!("wrong type for value; expected []string; got {}", v.type_name())),
            };
            Value::Kv(Rc::new(
                m.iter().filter(|(k, _)| !keys.contains(k)).map(|(k, v)| (k.clone(), v.clone())).collect(),
            ))
        }
        (Value::Pairs(p), "Names" | "Values") => {
            want(0)?;
            strings(p.iter().map(|(n, v)| if name == "Names" { n.clone() } else { v.clone() }).collect())
        }
        (Value::Alerts(a, true), "Firing" | "Resolved") => {
            want(0)?;
            let status = if name == "Firing" { "firing" } else { "resolved" };
            Value::Alerts(Rc::new(a.iter().filter(|x| x.status == status).cloned().collect()), false)
        }
        (Value::Time(ms), "Format") => {
            want(1)?;
            match &args[0] {
                Value::Str(layout) => Value::Str(super::gotime::format(*ms, layout)),
                v => return Err(format!("wrong type for value; expected string; got {}", v.type_name())),
            }
        }
        (Value::Time(ms), "Unix") => {
            want(0)?;
            Value::Int(ms.div_euclid(1000))
        }
        (Value::Time(ms), "UTC" | "Local") => {
            want(0)?;
            Value::Time(*ms)
        }
        (Value::Time(ms), "String") => {
            want(0)?;
            Value::Str(super::value::go_time(*ms))
        }
        (v, _) if args.is_empty() => return Err(format!("can't evaluate field {name} in type {}", v.type_name())),
        (v, _) => return Err(format!("{name} is not a method but has arguments (type {})", v.type_name())),
    })
}
