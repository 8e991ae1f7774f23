//! A safe reader for Python list-of-string literals, as SWE-bench Pro stores its test lists
//! (`"['test/a.js | works', \"it's\"]"`); upstream `eval`s them. This never evaluates
//! anything: it accepts exactly a list (or tuple) of string literals, with single, double or
//! triple quotes, `r`/`u` prefixes, Python's escapes, adjacent-literal concatenation, trailing
//! commas and any whitespace, and reports the byte offset of the first thing it cannot read.
//!
//! Not here: other Python values (numbers, nested lists, bytes, f-strings are errors).

/// Why a cell is not a list of string literals; `offset` is a byte offset into the cell.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PyLiteralError {
    pub offset: usize,
    pub message: String,
}

struct Reader<'a> {
    s: &'a str,
    at: usize,
}

fn err<T>(offset: usize, message: impl Into<String>) -> Result<T, PyLiteralError> {
    Err(PyLiteralError {
        offset,
        message: message.into(),
    })
}

impl Reader<'_> {
    fn peek(&self) -> Option<char> {
        self.s[self.at..].chars().next()
    }

    fn bump(&mut self) -> Option<char> {
        let c = self.peek()?;
        self.at += c.len_utf8();
        Some(c)
    }

    fn skip_ws(&mut self) {
        while let Some(c) = self.peek() {
            if c.is_whitespace() {
                self.at += c.len_utf8();
            } else if c == '\\' && self.s[self.at + 1..].starts_with('\n') {
                // An explicit line continuation between tokens.
                self.at += 2;
            } else {
                break;
            }
        }
    }

    /// One string literal (with its prefix), or `None` when the next token is not one.
    fn literal(&mut self) -> Result<Option<String>, PyLiteralError> {
        let start = self.at;
        let mut raw = false;
        let rest = &self.s[self.at..];
        let prefix_len = rest.chars().take_while(|c| c.is_ascii_alphabetic()).count();
        if prefix_len > 0 {
            let prefix = &rest[..prefix_len];
            let next = rest[prefix_len..].chars().next();
            if !matches!(next, Some('\'' | '"')) {
                return err(
                    start,
                    format!("expected a string literal, found `{prefix}`"),
                );
            }
            match prefix.to_ascii_lowercase().as_str() {
                "r" => raw = true,
                "u" => {}
                other => {
                    return err(
                        start,
                        format!(
                            "string prefix `{other}` is not supported (only plain, r and u strings are test names)"
                        ),
                    );
                }
            }
            self.at += prefix_len;
        }
        let Some(q) = self.peek().filter(|c| *c == '\'' || *c == '"') else {
            return Ok(None);
        };
        let triple: String = std::iter::repeat_n(q, 3).collect();
        let long = self.s[self.at..].starts_with(&triple);
        self.at += if long { 3 } else { 1 };
        let mut out = String::new();
        loop {
            let here = self.at;
            let Some(c) = self.bump() else {
                return err(start, "unterminated string literal");
            };
            if c == q {
                if !long {
                    return Ok(Some(out));
                }
                if self.s[here..].starts_with(&triple) {
                    self.at = here + 3;
                    return Ok(Some(out));
                }
                out.push(c);
                continue;
            }
            if c == '\n' && !long {
                return err(here, "newline inside a single-quoted string literal");
            }
            if c != '\\' {
                out.push(c);
                continue;
            }
            let Some(e) = self.bump() else {
                return err(start, "unterminated string literal");
            };
            if raw {
                // A raw string keeps the backslash; `\'` does not end it.
                out.push('\\');
                out.push(e);
                continue;
            }
            match e {
                '\n' => {}
                '\\' => out.push('\\'),
                '\'' => out.push('\''),
                '"' => out.push('"'),
                'a' => out.push('\x07'),
                'b' => out.push('\x08'),
                'f' => out.push('\x0c'),
                'n' => out.push('\n'),
                'r' => out.push('\r'),
                't' => out.push('\t'),
                'v' => out.push('\x0b'),
                '0'..='7' => {
                    let mut v = e.to_digit(8).expect("octal");
                    for _ in 0..2 {
                        match self.peek().and_then(|d| d.to_digit(8)) {
                            Some(d) => {
                                v = v * 8 + d;
                                self.at += 1;
                            }
                            None => break,
                        }
                    }
                    out.push(char::from_u32(v).expect("octal escapes are below 0o777"));
                }
                'x' | 'u' | 'U' => {
                    let n = match e {
                        'x' => 2,
                        'u' => 4,
                        _ => 8,
                    };
                    let digits = self.s.get(self.at..self.at + n).unwrap_or("");
                    if digits.len() != n || !digits.chars().all(|d| d.is_ascii_hexdigit()) {
                        return err(here, format!("truncated \\{e} escape"));
                    }
                    let v = u32::from_str_radix(digits, 16).expect("hex digits");
                    let Some(ch) = char::from_u32(v) else {
                        return err(here, format!("\\{e}{digits} is not a Unicode scalar value"));
                    };
                    self.at += n;
                    out.push(ch);
                }
                'N' => return err(here, "\\N{...} escapes are not supported"),
                other => {
                    // Python keeps an unknown escape as written.
                    out.push('\\');
                    out.push(other);
                }
            }
        }
    }

    /// Adjacent literals concatenate (`'a' 'b'` is `'ab'`).
    fn item(&mut self) -> Result<Option<String>, PyLiteralError> {
        let Some(mut s) = self.literal()? else {
            return Ok(None);
        };
        loop {
            let before = self.at;
            self.skip_ws();
            match self.peek() {
                Some('\'' | '"' | 'r' | 'R' | 'u' | 'U' | 'b' | 'B' | 'f' | 'F') => {
                    match self.literal()? {
                        Some(more) => s.push_str(&more),
                        None => {
                            self.at = before;
                            return Ok(Some(s));
                        }
                    }
                }
                _ => {
                    self.at = before;
                    return Ok(Some(s));
                }
            }
        }
    }
}

/// Parses a Python list (or tuple) of string literals.
pub fn parse_str_list(cell: &str) -> Result<Vec<String>, PyLiteralError> {
    let mut r = Reader { s: cell, at: 0 };
    r.skip_ws();
    let close = match r.bump() {
        Some('[') => ']',
        Some('(') => ')',
        Some(c) => return err(r.at - c.len_utf8(), format!("expected `[`, found `{c}`")),
        None => return err(0, "expected a list, found an empty cell"),
    };
    let mut out = Vec::new();
    let mut commas = 0;
    loop {
        r.skip_ws();
        if r.peek() == Some(close) {
            r.bump();
            break;
        }
        let at = r.at;
        match r.item()? {
            Some(s) => out.push(s),
            None => {
                return match r.peek() {
                    Some(c) => err(at, format!("expected a string literal, found `{c}`")),
                    None => err(at, format!("unterminated list: expected `{close}`")),
                };
            }
        }
        r.skip_ws();
        match r.bump() {
            Some(',') => commas += 1,
            Some(c) if c == close => break,
            Some(c) => {
                return err(
                    r.at - c.len_utf8(),
                    format!("expected `,` or `{close}`, found `{c}`"),
                );
            }
            None => return err(r.at, format!("unterminated list: expected `{close}`")),
        }
    }
    // `(x)` without a comma is a parenthesised string, not a tuple: Python's eval gives a str.
    if close == ')' && out.len() == 1 && commas == 0 {
        return err(
            0,
            "a parenthesised string is not a list (add a trailing comma for a tuple)",
        );
    }
    r.skip_ws();
    if r.at < cell.len() {
        return err(r.at, "unexpected text after the list");
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(s: &str) -> Vec<String> {
        parse_str_list(s).unwrap_or_else(|e| panic!("{s:?}: {e:?}"))
    }

    #[test]
    fn reads_real_cells() {
        assert_eq!(
            ok(r#"['test/user.js | User .search() should search user', "it's \"quoted\""]"#),
            [
                "test/user.js | User .search() should search user",
                "it's \"quoted\""
            ]
        );
        assert_eq!(ok("[]"), Vec::<String>::new());
        assert_eq!(ok("  [ 'a' ,\n 'b', ]  "), ["a", "b"]);
        assert_eq!(ok("('a', 'b')"), ["a", "b"]);
        assert_eq!(ok("('a',)"), ["a"]);
    }

    #[test]
    fn escapes_follow_python() {
        assert_eq!(ok(r"['a\'b']"), ["a'b"]);
        assert_eq!(ok(r#"["a\"b"]"#), ["a\"b"]);
        assert_eq!(
            ok(r"['tab\there', 'nl\n', 'bs\\']"),
            ["tab\there", "nl\n", "bs\\"]
        );
        assert_eq!(
            ok(r"['\x41\u00e9\U0001F600\101\0']"),
            ["A\u{e9}\u{1F600}A\0"]
        );
        // Unknown escapes stay as written, as in Python.
        assert_eq!(ok(r"['a\d[0-9]']"), ["a\\d[0-9]"]);
        // Raw strings keep backslashes.
        assert_eq!(ok(r"[r'a\nb', R'\'']"), ["a\\nb", "\\'"]);
        assert_eq!(ok(r"[u'x']"), ["x"]);
        assert_eq!(ok("['''tri'ple''', \"\"\"a\"b\"\"\"]"), ["tri'ple", "a\"b"]);
        assert_eq!(ok("['a' 'b', \"c\"\n 'd']"), ["ab", "cd"]);
        assert_eq!(ok("['a\\\nb']"), ["ab"]);
        assert_eq!(ok("['caf\u{e9} \u{1F600}']"), ["caf\u{e9} \u{1F600}"]);
    }

    /// Differential: what Python's own `ast.literal_eval` reads from the same cells.
    #[test]
    fn agrees_with_python_on_tricky_cells() {
        let cells = [
            r#"['a', "b", '''c''', """d""", r'\d', u'é', 'x' "y", '\x41\u00e9\101\q', ]"#,
            "(\n  'it\\'s',\n  \"say \\\"hi\\\"\",\n)",
            r"['tab\t', 'nl\n', 'cr\r', 'nul\0', 'bell\a', 'oct\777', 'U\U0001F600']",
            "['a\\\nb', 'test/user.js | User .search() should search user']",
            "[]",
        ];
        for cell in cells {
            let out = std::process::Command::new("python3")
                .args([
                    "-c",
                    "import ast, json, sys; print(json.dumps(list(ast.literal_eval(sys.argv[1]))))",
                    cell,
                ])
                .output()
                .expect("python3");
            assert!(
                out.status.success(),
                "{cell}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            let python: Vec<String> = serde_json::from_slice(&out.stdout).unwrap();
            assert_eq!(ok(cell), python, "{cell}");
        }
    }

    #[test]
    fn adversarial_cells_are_errors_with_offsets() {
        for (cell, offset) in [
            ("", 0),
            ("['a'", 4),
            ("['a' 'b'", 8),
            ("['a', 1]", 6),
            ("['a', ['b']]", 6),
            ("['a'] + ['b']", 6),
            ("__import__('os').system('x')", 0),
            ("['a', b'x']", 6),
            ("[f'{x}']", 1),
            ("['unterminated]", 1),
            ("['a\\x4']", 3),
            ("['\\N{BULLET}']", 2),
            ("['line\nbreak']", 6),
            ("['a',,]", 5),
            ("{'a'}", 0),
            ("('a')", 0),
            ("['\\ud800']", 2),
            ("['a'] # c", 6),
        ] {
            let e = parse_str_list(cell).expect_err(cell);
            assert_eq!(e.offset, offset, "{cell:?}: {e:?}");
            assert!(!e.message.is_empty());
        }
    }
}
