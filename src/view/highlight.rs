//! Syntax colour for diffs: syntect's bundled grammars, emitted as spans with scope classes
//! (`s-keyword`, `s-string`, ...) that the viewer's stylesheet colours, so no theme is embedded
//! and the HTML is the same on the server and on disk. A file of unknown type, or a line
//! syntect cannot parse, is escaped text.

use std::sync::LazyLock;

use syntect::html::{ClassStyle, line_tokens_to_classed_spans};
use syntect::parsing::{ParseState, ScopeStack, SyntaxReference, SyntaxSet};

static SYNTAXES: LazyLock<SyntaxSet> = LazyLock::new(SyntaxSet::load_defaults_newlines);

/// Lines longer than this are not coloured (minified files).
const MAX_COLOURED_LINE: usize = 2_000;

/// Escapes text for HTML.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// The highlighter (its grammars load once per process).
pub struct Highlighter {
    set: &'static SyntaxSet,
}

impl Default for Highlighter {
    fn default() -> Self {
        Highlighter::new()
    }
}

impl Highlighter {
    pub fn new() -> Highlighter {
        Highlighter { set: &SYNTAXES }
    }

    fn syntax_for(&self, path: &str) -> Option<&'static SyntaxReference> {
        let name = path.rsplit('/').next().unwrap_or(path);
        let ext = name.rsplit_once('.').map_or(name, |(_, e)| e);
        self.set
            .find_syntax_by_extension(ext)
            .or_else(|| self.set.find_syntax_by_extension(name))
            .filter(|s| s.name != "Plain Text")
    }

    /// A colouring stream for the lines of the file `path`, in order.
    pub fn stream(&self, path: &str) -> Stream {
        Stream {
            state: self
                .syntax_for(path)
                .map(|s| (ParseState::new(s), ScopeStack::new())),
        }
    }
}

/// The lines of one file.
pub struct Stream {
    state: Option<(ParseState, ScopeStack)>,
}

const STYLE: ClassStyle = ClassStyle::SpacedPrefixed { prefix: "s-" };

/// `<span class="s-keyword s-control s-python">` for the scope `keyword.control.python`.
fn open_span(scope: &syntect::parsing::Scope) -> String {
    let classes: Vec<String> = scope
        .build_string()
        .split('.')
        .map(|atom| format!("s-{atom}"))
        .collect();
    format!("<span class=\"{}\">", classes.join(" "))
}

impl Stream {
    /// The HTML of the next line (without its newline): self-contained, every span it opens
    /// (or inherits from the lines before it) closed at its end.
    pub fn line(&mut self, text: &str) -> String {
        if text.len() > MAX_COLOURED_LINE {
            return escape(text);
        }
        let Some((parse, stack)) = self.state.as_mut() else {
            return escape(text);
        };
        let with_newline = format!("{text}\n");
        let Ok(ops) = parse.parse_line(&with_newline, &SYNTAXES) else {
            self.state = None;
            return escape(text);
        };
        let mut out: String = stack.as_slice().iter().map(open_span).collect();
        let before = stack.len() as isize;
        let Ok((html, delta)) = line_tokens_to_classed_spans(&with_newline, &ops, STYLE, stack)
        else {
            self.state = None;
            return escape(text);
        };
        // The newline is the line's last character: drop it from the HTML.
        match html.rfind('\n') {
            Some(i) => {
                out.push_str(&html[..i]);
                out.push_str(&html[i + 1..]);
            }
            None => out.push_str(&html),
        }
        for _ in 0..(before + delta).max(0) {
            out.push_str("</span>");
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_string_spanning_lines_stays_coloured_and_each_line_is_closed() {
        let hl = Highlighter::new();
        let mut s = hl.stream("x.py");
        let a = s.line("x = \"\"\"doc <b>");
        let b = s.line("still doc\"\"\"");
        assert!(a.contains("s-string") && a.contains("&lt;b&gt;"), "{a}");
        assert!(b.starts_with("<span") && b.contains("s-string"), "{b}");
        for h in [&a, &b] {
            assert_eq!(
                h.matches("<span").count(),
                h.matches("</span>").count(),
                "{h}"
            );
        }
        let mut plain = hl.stream("notes.unknownext");
        assert_eq!(plain.line("a <b>"), "a &lt;b&gt;");
    }
}
