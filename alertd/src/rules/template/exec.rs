//! Runs a parsed template over its data: Go text/template's `exec`, with the value model of
//! [`super::value`]. Errors carry the byte offset and text of the command that failed, as Go's
//! "executing … at <…>" messages do.

use super::QueryFn;
use super::funcs;
use super::parse::{Arg, Cmd, Node, Pipe};
use super::value::Value;

/// A failure while running a template: where (byte offset and the command's text) and why.
#[derive(Debug, Clone, PartialEq)]
pub struct ExecError {
    pub pos: usize,
    pub context: String,
    pub msg: String,
}

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
    let mut s = State { vars, query, external_url, out: String::new(), steps: 0 };
    s.walk(dot, nodes)?;
    Ok(s.out)
}

impl State<'_> {
    fn walk(&mut self, dot: &Value, nodes: &[Node]) -> Result<Flow, ExecError> {
        for n in nodes {
            self.steps += 1;
            if self.steps > MAX_STEPS {
                return Err(ExecError { pos: 0, context: String::new(), msg: "template runs too long".into() });
            }
            let flow = match n {
                Node::Text(t) => {
                    self.out.push_str(t);
                    Flow::Normal
                }
                Node::Action(p) => {
                    let v = self.pipe(dot, p, true)?;
                    if p.decl.is_empty() {
                        self.out.push_str(&v.print_action());
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
            };
            if !matches!(flow, Flow::Normal) {
                return Ok(flow);
            }
        }
        Ok(Flow::Normal)
    }

    fn range(&mut self, dot: &Value, pipe: &Pipe, body: &[Node], els: &[Node]) -> Result<Flow, ExecError> {
        let mark = self.vars.len();
        let v = self.pipe(dot, pipe, false)?;
        let items: Vec<(Value, Value)> = match &v {
            Value::Labels(m) => m.iter().map(|(k, v)| (Value::Str(k.clone()), Value::Str(v.clone()))).collect(),
            Value::Map(m) => m.iter().map(|(k, v)| (Value::Str(k.clone()), v.clone())).collect(),
            Value::Samples(s) => {
                s.iter().enumerate().map(|(i, x)| (Value::Int(i as i64), Value::Sample(x.clone()))).collect()
            }
            Value::Int(n) => (0..*n).map(|i| (Value::Int(i), Value::Int(i))).collect(),
            Value::Nil => Vec::new(),
            other => {
                let msg = format!("range can't iterate over {}", other.go_string());
                return Err(ExecError { pos: pipe.pos, context: pipe.to_string(), msg });
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
        let err = |msg: String| ExecError { pos: cmd.pos, context: cmd.to_string(), msg };
        let first = &cmd.args[0];
        if let Arg::Func(name) = first {
            return self.call(dot, name, &cmd.args[1..], piped).map_err(err);
        }
        if cmd.args.len() > 1 || piped.is_some() {
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
        funcs::call(name, values, self.query, self.external_url)
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
            Value::Nil => return Err(format!("nil pointer evaluating interface {{}}.{f}")),
            other => return Err(format!("can't evaluate field {f} in type {}", other.type_name())),
        };
    }
    Ok(v)
}
