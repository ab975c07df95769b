//! Go text/template's lexer: literal text, and inside `{{ }}` (with `{{- ` / ` -}}` trimming the
//! white space beside them, and `{{/* comments */}}`) identifiers, `.Fields`, `$variables`,
//! strings, raw strings, characters, numbers, `( ) | , := =`.

#[derive(Debug, Clone, PartialEq)]
pub enum Tok {
    Text(String),
    Open,
    Close,
    Ident(String),
    /// `.Name`; a lone `.` is `Dot`.
    Field(String),
    Dot,
    /// `$name`, or `$` itself.
    Var(String),
    /// A string's value; the item's `src` keeps its quoted form.
    Str(String),
    Number,
    Char(i64),
    LParen,
    RParen,
    Pipe,
    Declare,
    Assign,
    Comma,
}

#[derive(Debug, Clone)]
pub struct Item {
    pub tok: Tok,
    /// Byte offset in the template text.
    pub pos: usize,
    /// The item's source text.
    pub src: String,
    /// White space came right before it (a field after a space starts a new operand).
    pub spaced: bool,
}

/// Splits `text` into items; the error names the byte offset and what is wrong.
pub fn lex(text: &str) -> Result<Vec<Item>, (usize, String)> {
    let mut items = Vec::new();
    let b = text.as_bytes();
    let mut i = 0;
    let mut trim_next = false;
    while i < b.len() {
        let open = text[i..].find("{{").map(|o| i + o);
        let end = open.unwrap_or(b.len());
        let mut lit = &text[i..end];
        if trim_next {
            lit = lit.trim_start_matches(is_space);
        }
        let Some(open) = open else {
            push_text(&mut items, lit, i);
            break;
        };
        // `{{- ` trims the text before it.
        let trim_left = b.get(open + 2) == Some(&b'-') && b.get(open + 3).is_some_and(|c| is_space(*c as char));
        if trim_left {
            lit = lit.trim_end_matches(is_space);
        }
        push_text(&mut items, lit, i);
        let mut j = open + 2 + if trim_left { 2 } else { 0 };
        // A comment fills the whole action.
        if text[j..].starts_with("/*") {
            let close = text[j..].find("*/").ok_or((open, "unclosed comment".to_string()))? + j + 2;
            let (after, trim) =
                close_at(text, close).ok_or((open, "comment ends before closing delimiter".to_string()))?;
            i = after;
            trim_next = trim;
            continue;
        }
        items.push(Item { tok: Tok::Open, pos: open, src: "{{".into(), spaced: false });
        loop {
            let start = j;
            while j < b.len() && is_space(b[j] as char) {
                j += 1;
            }
            let spaced = j > start;
            // ` -}}` needs the white space before it: look from where it started.
            if let Some((after, trim)) = close_at(text, start).or_else(|| close_at(text, j)) {
                items.push(Item { tok: Tok::Close, pos: j, src: "}}".into(), spaced });
                i = after;
                trim_next = trim;
                break;
            }
            if j >= b.len() {
                return Err((open, "unclosed action".into()));
            }
            let (tok, len) = token(text, j)?;
            items.push(Item { tok, pos: j, src: text[j..j + len].to_string(), spaced });
            j += len;
        }
    }
    Ok(items)
}

fn push_text(items: &mut Vec<Item>, lit: &str, pos: usize) {
    if !lit.is_empty() {
        items.push(Item { tok: Tok::Text(lit.to_string()), pos, src: lit.to_string(), spaced: false });
    }
}

fn is_space(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\r' | '\n')
}

/// Whether an action closes at `j` (`}}`, or ` -}}` after white space): the offset after it and
/// whether it trims the text that follows.
fn close_at(text: &str, j: usize) -> Option<(usize, bool)> {
    let rest = &text[j..];
    if rest.starts_with("}}") {
        return Some((j + 2, false));
    }
    let ws = rest.len() - rest.trim_start_matches(is_space).len();
    if ws > 0 && rest[ws..].starts_with("-}}") {
        return Some((j + ws + 3, true));
    }
    None
}

fn token(text: &str, j: usize) -> Result<(Tok, usize), (usize, String)> {
    let rest = &text[j..];
    let c = rest.chars().next().unwrap_or(' ');
    let word = |from: usize| {
        from + rest[from..].find(|c: char| !(c.is_alphanumeric() || c == '_')).unwrap_or(rest.len() - from)
    };
    Ok(match c {
        '(' => (Tok::LParen, 1),
        ')' => (Tok::RParen, 1),
        '|' => (Tok::Pipe, 1),
        ',' => (Tok::Comma, 1),
        '=' => (Tok::Assign, 1),
        ':' if rest.starts_with(":=") => (Tok::Declare, 2),
        '"' => {
            let (s, len) = quoted(rest).map_err(|e| (j, e))?;
            (Tok::Str(s), len)
        }
        '`' => {
            let end = rest[1..].find('`').ok_or((j, "unterminated raw quoted string".to_string()))?;
            (Tok::Str(rest[1..1 + end].to_string()), end + 2)
        }
        '\'' => {
            let end = rest[1..].find('\'').ok_or((j, "unterminated character constant".to_string()))? + 2;
            let (s, _) = quoted(&format!("\"{}\"", &rest[1..end - 1])).map_err(|e| (j, e))?;
            let mut cs = s.chars();
            match (cs.next(), cs.next()) {
                (Some(ch), None) => (Tok::Char(ch as i64), end),
                _ => return Err((j, format!("malformed character constant: {}", &rest[..end]))),
            }
        }
        '$' => (Tok::Var(rest[..word(1)].to_string()), word(1)),
        '.' if rest[1..].starts_with(|c: char| c.is_ascii_digit()) => (Tok::Number, number_len(rest)),
        '.' => {
            let end = word(1);
            if end == 1 { (Tok::Dot, 1) } else { (Tok::Field(rest[1..end].to_string()), end) }
        }
        '+' | '-' | '0'..='9' => (Tok::Number, number_len(rest)),
        c if c.is_alphabetic() || c == '_' => (Tok::Ident(rest[..word(0)].to_string()), word(0)),
        c => return Err((j, format!("unrecognized character in action: {c:?}"))),
    })
}

fn number_len(rest: &str) -> usize {
    let b = rest.as_bytes();
    let mut i = 0;
    if matches!(b.first(), Some(b'+' | b'-')) {
        i += 1;
    }
    while i < b.len() {
        let c = b[i];
        let exponent_sign =
            matches!(c, b'+' | b'-') && matches!(b[i - 1], b'e' | b'E' | b'p' | b'P') && !rest.starts_with("0x");
        if c.is_ascii_alphanumeric() || c == b'.' || c == b'_' || exponent_sign {
            i += 1;
        } else {
            break;
        }
    }
    i
}

/// A Go interpreted string literal at the start of `s`: its value and its length in `s`.
fn quoted(s: &str) -> Result<(String, usize), String> {
    let mut out = String::new();
    let mut it = s.char_indices().skip(1);
    while let Some((i, c)) = it.next() {
        match c {
            '"' => return Ok((out, i + 1)),
            '\n' => break,
            '\\' => {
                let (_, e) = it.next().ok_or("unterminated quoted string")?;
                let mut hex = |n: usize| -> Result<u32, String> {
                    let mut v = 0;
                    for _ in 0..n {
                        let (_, d) = it.next().ok_or("unterminated quoted string")?;
                        v = v * 16 + d.to_digit(16).ok_or(format!("invalid escape digit {d:?}"))?;
                    }
                    Ok(v)
                };
                match e {
                    'n' => out.push('\n'),
                    't' => out.push('\t'),
                    'r' => out.push('\r'),
                    'a' => out.push('\u{7}'),
                    'b' => out.push('\u{8}'),
                    'f' => out.push('\u{c}'),
                    'v' => out.push('\u{b}'),
                    '\\' => out.push('\\'),
                    '"' => out.push('"'),
                    '\'' => out.push('\''),
                    'x' => out.push(char::from_u32(hex(2)?).ok_or("invalid escape")?),
                    'u' => out.push(char::from_u32(hex(4)?).ok_or("invalid escape")?),
                    'U' => out.push(char::from_u32(hex(8)?).ok_or("invalid escape")?),
                    '0'..='7' => {
                        let mut v = e.to_digit(8).unwrap_or(0);
                        for _ in 0..2 {
                            let (_, d) = it.next().ok_or("unterminated quoted string")?;
                            v = v * 8 + d.to_digit(8).ok_or(format!("invalid escape digit {d:?}"))?;
                        }
                        out.push(char::from_u32(v).ok_or("invalid escape")?);
                    }
                    e => return Err(format!("unknown escape sequence \\{e}")),
                }
            }
            c => out.push(c),
        }
    }
    Err("unterminated quoted string".into())
}
