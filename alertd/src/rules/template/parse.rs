//! Go text/template's parser: text, actions, `if`/`else if`/`else`, `range` (with `break` and
//! `continue`), `with`/`else with`, pipelines with `$variable :=` / `=` declarations, commands
//! and operands. As in Go, an undefined function or variable is a parse error; fields are checked
//! when the template runs. `define`, `template` and `block` are for notification templates
//! ([`Dialect::Notify`]); a rule's template is one text, with nothing to include, and refuses them.

use super::funcs::{self, Dialect};
use super::lex::{Item, Tok, lex};

#[derive(Debug, Clone, PartialEq)]
pub enum Node {
    Text(String),
    Action(Pipe),
    If {
        pipe: Pipe,
        then: Vec<Node>,
        els: Vec<Node>,
    },
    Range {
        pipe: Pipe,
        body: Vec<Node>,
        els: Vec<Node>,
    },
    With {
        pipe: Pipe,
        body: Vec<Node>,
        els: Vec<Node>,
    },
    Break,
    Continue,
    /// `{{template "name" pipeline}}` (also what `{{block}}` runs): `pos` is the action's offset.
    Template {
        name: String,
        pipe: Option<Pipe>,
        pos: usize,
    },
}

/// A parsed text: its nodes and the templates it defines (`define`, `block`), in order.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Parsed {
    pub nodes: Vec<Node>,
    pub defines: Vec<(String, Vec<Node>)>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Pipe {
    pub pos: usize,
    /// Declared (`:=`) or assigned (`=`) variables.
    pub decl: Vec<String>,
    pub assign: bool,
    pub cmds: Vec<Cmd>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Cmd {
    pub pos: usize,
    pub args: Vec<Arg>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Arg {
    /// `.` followed by fields (`.Labels.job`); no fields is dot itself.
    Field(Vec<String>),
    /// `$x.A.B`.
    Var(String, Vec<String>),
    Func(String),
    /// A string literal: its value and how it was written.
    Str(String, String),
    Int(i64, String),
    Float(f64, String),
    Bool(bool),
    Nil,
    /// `(pipeline).A.B`.
    Pipe(Box<Pipe>, Vec<String>),
}

/// The byte offset and reason of a parse error.
pub type ParseError = (usize, String);

pub fn parse(text: &str, predeclared: &[&str], dialect: Dialect) -> Result<Parsed, ParseError> {
    let items = lex(text)?;
    let mut p = Parser {
        items,
        at: 0,
        eof: text.len(),
        vars: predeclared.iter().map(|v| v.to_string()).collect(),
        ranges: 0,
        dialect,
        depth: 0,
        defines: Vec::new(),
    };
    let (nodes, stop) = p.list()?;
    match stop {
        Stop::Eof => Ok(Parsed { nodes, defines: p.defines }),
        Stop::End(pos) => Err((pos, "unexpected {{end}}".into())),
        Stop::Else(pos) | Stop::ElseChain(pos, _) => Err((pos, "unexpected {{else}}".into())),
    }
}

enum Stop {
    Eof,
    End(usize),
    Else(usize),
    /// `{{else if …}}` / `{{else with …}}`: the keyword.
    ElseChain(usize, String),
}

struct Parser {
    items: Vec<Item>,
    at: usize,
    /// The text's length: where an unexpected end is reported.
    eof: usize,
    vars: Vec<String>,
    ranges: usize,
    dialect: Dialect,
    /// How deep in `if`/`range`/`with`/`block` the parser is: `define` is only allowed at the top.
    depth: usize,
    defines: Vec<(String, Vec<Node>)>,
}

impl Parser {
    fn peek(&self) -> Option<&Item> {
        self.items.get(self.at)
    }

    fn next(&mut self) -> Option<Item> {
        let it = self.items.get(self.at).cloned();
        self.at += 1;
        it
    }

    fn end_pos(&self) -> usize {
        self.eof
    }

    fn expect_close(&mut self, what: &str) -> Result<(), ParseError> {
        match self.next() {
            Some(Item { tok: Tok::Close, .. }) => Ok(()),
            Some(i) => Err((i.pos, format!("unexpected {:?} in {what}", i.src))),
            None => Err((self.end_pos(), format!("unclosed action in {what}"))),
        }
    }

    fn keyword(&self) -> Option<String> {
        match self.peek() {
            Some(Item { tok: Tok::Ident(k), .. }) => Some(k.clone()),
            _ => None,
        }
    }

    fn list(&mut self) -> Result<(Vec<Node>, Stop), ParseError> {
        let mut nodes = Vec::new();
        while let Some(item) = self.next() {
            match item.tok {
                Tok::Text(t) => nodes.push(Node::Text(t)),
                Tok::Open => {
                    let kw = self.keyword();
                    match kw.as_deref() {
                        Some(k @ ("if" | "range" | "with")) => {
                            self.at += 1;
                            nodes.push(self.control(k)?);
                        }
                        Some("end") => {
                            self.at += 1;
                            self.expect_close("end")?;
                            return Ok((nodes, Stop::End(item.pos)));
                        }
                        Some("else") => {
                            self.at += 1;
                            if let Some(k @ ("if" | "with")) = self.keyword().as_deref() {
                                self.at += 1;
                                return Ok((nodes, Stop::ElseChain(item.pos, k.to_string())));
                            }
                            self.expect_close("else")?;
                            return Ok((nodes, Stop::Else(item.pos)));
                        }
                        Some(k @ ("break" | "continue")) => {
                            self.at += 1;
                            if self.ranges == 0 {
                                return Err((item.pos, format!("{{{{{k}}}}} outside {{{{range}}}}")));
                            }
                            self.expect_close(k)?;
                            nodes.push(if k == "break" { Node::Break } else { Node::Continue });
                        }
                        Some(k @ ("define" | "template" | "block")) if self.dialect == Dialect::Rules => {
                            return Err((item.pos, format!("{{{{{k}}}}} is not supported in rule templates")));
                        }
                        Some("define") => {
                            self.at += 1;
                            if self.depth > 0 {
                                return Err((item.pos, "unexpected <define> in command".into()));
                            }
                            let name = self.template_name("define clause")?;
                            self.expect_close("define clause")?;
                            let body = self.body("define")?;
                            self.defines.push((name, body));
                        }
                        Some(k @ ("template" | "block")) => {
                            self.at += 1;
                            let name = self.template_name(&format!("{k} clause"))?;
                            let pipe = if matches!(self.peek(), Some(Item { tok: Tok::Close, .. })) {
                                self.at += 1;
                                None
                            } else {
                                let mark = self.vars.len();
                                let p = self.pipeline(k, false)?;
                                self.vars.truncate(mark);
                                Some(p)
                            };
                            if k == "block" {
                                let body = self.body("block")?;
                                self.defines.push((name.clone(), body));
                            }
                            nodes.push(Node::Template { name, pipe, pos: item.pos });
                        }
                        _ => {
                            let pipe = self.pipeline("command", false)?;
                            nodes.push(Node::Action(pipe));
                        }
                    }
                }
                _ => return Err((item.pos, format!("unexpected {:?}", item.src))),
            }
        }
        Ok((nodes, Stop::Eof))
    }

    /// A template name: a string constant.
    fn template_name(&mut self, context: &str) -> Result<String, ParseError> {
        match self.next() {
            Some(Item { tok: Tok::Str(s), .. }) => Ok(s),
            Some(i) => Err((i.pos, format!("unexpected {:?} in {context}", i.src))),
            None => Err((self.end_pos(), format!("unexpected EOF in {context}"))),
        }
    }

    /// The body of a `define` or `block`, up to and including its `{{end}}`: a template of its own,
    /// where only `$` is defined.
    fn body(&mut self, kind: &str) -> Result<Vec<Node>, ParseError> {
        let vars = std::mem::replace(&mut self.vars, vec!["$".to_string()]);
        let ranges = std::mem::take(&mut self.ranges);
        self.depth += 1;
        let (body, stop) = self.list()?;
        self.depth -= 1;
        self.vars = vars;
        self.ranges = ranges;
        match stop {
            Stop::End(_) => Ok(body),
            Stop::Eof => Err((self.end_pos(), format!("unexpected EOF in {kind}"))),
            Stop::Else(p) | Stop::ElseChain(p, _) => Err((p, "unexpected {{else}}".into())),
        }
    }

    /// `if`, `range` or `with` after its keyword, up to and including its `{{end}}`.
    fn control(&mut self, kind: &str) -> Result<Node, ParseError> {
        self.depth += 1;
        let node = self.control_body(kind);
        self.depth -= 1;
        node
    }

    fn control_body(&mut self, kind: &str) -> Result<Node, ParseError> {
        let mark = self.vars.len();
        let pipe = self.pipeline(kind, kind == "range")?;
        if kind == "range" {
            self.ranges += 1;
        }
        let (body, stop) = self.list()?;
        if kind == "range" {
            self.ranges -= 1;
        }
        let els = match stop {
            Stop::End(_) => Vec::new(),
            Stop::Else(_) => match self.list()? {
                (els, Stop::End(_)) => els,
                (_, Stop::Eof) => return Err((self.end_pos(), format!("unexpected EOF in {kind}"))),
                (_, Stop::Else(p) | Stop::ElseChain(p, _)) => return Err((p, "expected end; found {{else}}".into())),
            },
            Stop::ElseChain(pos, k) => {
                if kind == "range" || (kind == "with" && k != "with") || (kind == "if" && k != "if") {
                    return Err((pos, format!("{{{{else {k}}}}} after {{{{{kind}}}}}")));
                }
                vec![self.control(&k)?]
            }
            Stop::Eof => return Err((self.end_pos(), format!("unexpected EOF in {kind}"))),
        };
        self.vars.truncate(mark);
        Ok(match kind {
            "if" => Node::If { pipe, then: body, els },
            "range" => Node::Range { pipe, body, els },
            _ => Node::With { pipe, body, els },
        })
    }

    /// A pipeline up to and including the `}}` (or `)` when `context` is "parenthesized pipeline").
    fn pipeline(&mut self, context: &str, range: bool) -> Result<Pipe, ParseError> {
        let pos = self.peek().map_or(self.end_pos(), |i| i.pos);
        let mut decl = Vec::new();
        let mut assign = false;
        if let Some(Item { tok: Tok::Var(v), .. }) = self.peek().cloned() {
            let after = self.items.get(self.at + 1).map(|i| i.tok.clone());
            match after {
                Some(Tok::Declare) | Some(Tok::Assign) => {
                    assign = after == Some(Tok::Assign);
                    self.at += 2;
                    decl.push(v);
                }
                Some(Tok::Comma) if range => {
                    let second = self.items.get(self.at + 2).map(|i| i.tok.clone());
                    let op = self.items.get(self.at + 3).map(|i| i.tok.clone());
                    match (second, op) {
                        (Some(Tok::Var(w)), Some(Tok::Declare | Tok::Assign)) => {
                            assign = self.items[self.at + 3].tok == Tok::Assign;
                            self.at += 4;
                            decl.push(v);
                            decl.push(w);
                        }
                        _ => return Err((pos, "range can only initialize variables".into())),
                    }
                }
                _ => {}
            }
        }
        for v in &decl {
            if assign && !self.vars.contains(v) {
                return Err((pos, format!("undefined variable {v:?}")));
            }
        }
        let mut cmds = Vec::new();
        let closer = |t: &Tok| if context == "parenthesized pipeline" { *t == Tok::RParen } else { *t == Tok::Close };
        loop {
            let cmd = self.command()?;
            // Only a function (or a field) can take the value piped into it.
            let constant = match cmd.args.first() {
                Some(Arg::Bool(_) | Arg::Nil | Arg::Str(..) | Arg::Int(..) | Arg::Float(..)) => true,
                Some(Arg::Field(f)) => f.is_empty(),
                _ => false,
            };
            if !cmds.is_empty() && constant {
                return Err((cmd.pos, format!("non executable command in pipeline stage {}", cmds.len() + 1)));
            }
            cmds.push(cmd);
            match self.next() {
                Some(Item { tok: Tok::Pipe, .. }) => continue,
                Some(i) if closer(&i.tok) => break,
                Some(i) => return Err((i.pos, format!("unexpected {:?} in {context}", i.src))),
                None => return Err((self.end_pos(), format!("unclosed action in {context}"))),
            }
        }
        if !assign {
            self.vars.extend(decl.iter().cloned());
        }
        Ok(Pipe { pos, decl, assign, cmds })
    }

    fn command(&mut self) -> Result<Cmd, ParseError> {
        let pos = self.peek().map_or(self.end_pos(), |i| i.pos);
        let mut args = Vec::new();
        while let Some(item) = self.peek().cloned() {
            if matches!(item.tok, Tok::Pipe | Tok::Close | Tok::RParen) {
                break;
            }
            self.at += 1;
            let mut arg = self.term(item)?;
            while let Some(Item { tok: Tok::Field(f), spaced: false, .. }) = self.peek().cloned() {
                self.at += 1;
                match &mut arg {
                    Arg::Field(fs) | Arg::Var(_, fs) | Arg::Pipe(_, fs) => fs.push(f),
                    _ => return Err((pos, format!("unexpected .{f} after a constant or function"))),
                }
            }
            args.push(arg);
        }
        match args.first() {
            None => Err((pos, "missing value for command".into())),
            Some(Arg::Nil) => Err((pos, "nil is not a command".into())),
            _ => Ok(Cmd { pos, args }),
        }
    }

    fn term(&mut self, item: Item) -> Result<Arg, ParseError> {
        Ok(match item.tok {
            Tok::Ident(name) => match name.as_str() {
                "true" => Arg::Bool(true),
                "false" => Arg::Bool(false),
                "nil" => Arg::Nil,
                n if funcs::defined(self.dialect, n) => Arg::Func(name),
                _ => return Err((item.pos, format!("function {name:?} not defined"))),
            },
            Tok::Dot => Arg::Field(Vec::new()),
            Tok::Field(f) => Arg::Field(vec![f]),
            Tok::Var(v) => {
                if !self.vars.contains(&v) {
                    return Err((item.pos, format!("undefined variable {v:?}")));
                }
                Arg::Var(v, Vec::new())
            }
            Tok::Str(s) => Arg::Str(s, item.src),
            Tok::Char(c) => Arg::Int(c, item.src),
            Tok::Number => number(&item.src).map_err(|e| (item.pos, e))?,
            Tok::LParen => {
                let pipe = self.pipeline("parenthesized pipeline", false)?;
                Arg::Pipe(Box::new(pipe), Vec::new())
            }
            _ => return Err((item.pos, format!("unexpected {:?} in operand", item.src))),
        })
    }
}

/// A Go number constant: an `int` when it reads as an integer (decimal, `0x`, `0o`, `0b`, or a
/// leading-zero octal), a `float64` when it has a point or an exponent.
fn number(src: &str) -> Result<Arg, String> {
    let bad = || format!("illegal number syntax: {src:?}");
    let clean = src.replace('_', "");
    let (neg, digits) = match clean.strip_prefix('-') {
        Some(d) => (true, d),
        None => (false, clean.strip_prefix('+').unwrap_or(&clean)),
    };
    let lower = digits.to_ascii_lowercase();
    let int = if let Some(h) = lower.strip_prefix("0x") {
        i64::from_str_radix(h, 16).ok()
    } else if let Some(o) = lower.strip_prefix("0o") {
        i64::from_str_radix(o, 8).ok()
    } else if let Some(b) = lower.strip_prefix("0b") {
        i64::from_str_radix(b, 2).ok()
    } else if lower.len() > 1 && lower.starts_with('0') && lower.bytes().all(|c| c.is_ascii_digit()) {
        i64::from_str_radix(&lower[1..], 8).ok()
    } else if lower.bytes().all(|c| c.is_ascii_digit()) {
        lower.parse().ok()
    } else {
        None
    };
    if let Some(i) = int {
        return Ok(Arg::Int(if neg { -i } else { i }, src.to_string()));
    }
    if lower.starts_with("0x") {
        return Err(bad());
    }
    let f: f64 = lower.parse().map_err(|_| bad())?;
    Ok(Arg::Float(if neg { -f } else { f }, src.to_string()))
}

impl std::fmt::Display for Arg {
    /// The operand as Go's `parse` nodes print it, for error messages.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let fields = |fs: &[String]| fs.iter().map(|x| format!(".{x}")).collect::<String>();
        match self {
            Arg::Field(fs) if fs.is_empty() => write!(f, "."),
            Arg::Field(fs) => write!(f, "{}", fields(fs)),
            Arg::Var(v, fs) => write!(f, "{v}{}", fields(fs)),
            Arg::Func(n) => write!(f, "{n}"),
            Arg::Str(_, src) | Arg::Int(_, src) | Arg::Float(_, src) => write!(f, "{src}"),
            Arg::Bool(b) => write!(f, "{b}"),
            Arg::Nil => write!(f, "nil"),
            Arg::Pipe(p, fs) => write!(f, "({p}){}", fields(fs)),
        }
    }
}

impl std::fmt::Display for Cmd {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let args: Vec<String> = self.args.iter().map(ToString::to_string).collect();
        write!(f, "{}", args.join(" "))
    }
}

impl std::fmt::Display for Pipe {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if !self.decl.is_empty() {
            write!(f, "{} {} ", self.decl.join(", "), if self.assign { "=" } else { ":=" })?;
        }
        let cmds: Vec<String> = self.cmds.iter().map(ToString::to_string).collect();
        write!(f, "{}", cmds.join(" | "))
    }
}
