//! What a model may have meant by an `old_text` that is not plain text: lines copied from a read
//! with their numbers, a patch (SEARCH/REPLACE block, unified diff hunk, Codex patch, `-`/`+`
//! lines), or text JSON-escaped twice. Each is another reading of the call, tried only when the
//! plain one matched nothing; `new_text` is read the same way, never on its own.

use super::text::split_lines;

/// How a reading differs from the call as given, for the result line.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Note {
    AsGiven,
    /// Line-number prefixes removed (from `new_text` too when it had them).
    Numbered {
        from_new: bool,
    },
    /// `old_text` read as a patch of this kind.
    Patch(&'static str),
    Unescaped,
}

impl Note {
    pub fn phrase(self) -> Option<String> {
        match self {
            Note::AsGiven => None,
            Note::Numbered { from_new: false } => {
                Some("line-number prefixes removed from old_text".into())
            }
            Note::Numbered { from_new: true } => {
                Some("line-number prefixes removed from old_text and new_text".into())
            }
            Note::Patch(kind) => Some(format!("old_text read as {kind}")),
            Note::Unescaped => {
                Some("old_text and new_text unescaped (they were escaped twice)".into())
            }
        }
    }
}

/// One way to read the call: the edits it makes, in order.
pub struct Reading {
    pub edits: Vec<(String, String)>,
    pub note: Note,
    /// The 0-based line `old_text` said it starts at.
    pub hint: Option<usize>,
    /// `old_text` is whole lines.
    pub whole_lines: bool,
}

impl Reading {
    fn one(old: String, new: String, note: Note) -> Reading {
        Reading {
            edits: vec![(old, new)],
            note,
            hint: None,
            whole_lines: false,
        }
    }
}

/// The readings of a call, the plain one first; `Err` when `old_text` is a patch that cannot be
/// read safely (a second `=======` in a block).
pub fn readings(old: &str, new: &str) -> Result<Vec<Reading>, String> {
    let mut out = vec![Reading::one(old.into(), new.into(), Note::AsGiven)];
    if let Some(r) = numbered(old, new) {
        out.push(r);
    }
    if let Some(r) = patch(old, new)? {
        out.push(r);
    }
    if old.contains('\\') {
        let (o, n) = (unescape(old), unescape(new));
        if o != old {
            out.push(Reading::one(o, n, Note::Unescaped));
        }
    }
    Ok(out)
}

/// A line's number and text when it starts with a read's prefix: `  12→`, `12\t`, `12: `,
/// `12 | `, `00012| `.
fn prefix(line: &str) -> Option<(usize, &str)> {
    let body = line.trim_start_matches([' ', '\t']);
    let digits = body.len() - body.trim_start_matches(|c: char| c.is_ascii_digit()).len();
    if digits == 0 || digits > 7 {
        return None;
    }
    let n = body[..digits].parse().ok()?;
    let rest = &body[digits..];
    let text = if let Some(t) = rest.strip_prefix('\u{2192}') {
        t
    } else if let Some(t) = rest.strip_prefix('\t') {
        t
    } else if let Some(t) = rest.strip_prefix(" | ").or(rest.strip_prefix("| ")) {
        t
    } else if let Some(t) = rest.strip_prefix(": ") {
        t
    } else if matches!(rest, " |" | "|" | ":") {
        ""
    } else {
        return None;
    };
    Some((n, text))
}

/// `old_text` whose every line carries a line-number prefix, numbered one after another.
fn numbered(old: &str, new: &str) -> Option<Reading> {
    let lines = split_lines(old);
    let stripped: Vec<(usize, &str)> = lines.iter().map(|l| prefix(l)).collect::<Option<_>>()?;
    if stripped.windows(2).any(|w| w[1].0 != w[0].0 + 1) {
        return None;
    }
    let join = |parts: &[&str], like: &str| {
        let mut s = parts.join("\n");
        if like.ends_with('\n') {
            s.push('\n');
        }
        s
    };
    let old_text = join(&stripped.iter().map(|p| p.1).collect::<Vec<_>>(), old);
    let new_lines = split_lines(new);
    let new_stripped: Option<Vec<&str>> = if new_lines.is_empty() {
        None
    } else {
        new_lines.iter().map(|l| prefix(l).map(|p| p.1)).collect()
    };
    let from_new = new_stripped.is_some();
    let new_text = match new_stripped {
        Some(parts) => join(&parts, new),
        None => new.to_string(),
    };
    Some(Reading {
        edits: vec![(old_text, new_text)],
        note: Note::Numbered { from_new },
        hint: stripped.first().map(|p| p.0.saturating_sub(1)),
        whole_lines: true,
    })
}

fn marker(line: &str, ch: char, word: &str) -> bool {
    let t = line.trim_end();
    let n = t.chars().take_while(|&c| c == ch).count();
    (5..=9).contains(&n) && t[n..].trim_start().trim_end_matches('>') == word
}

fn is_search(line: &str) -> bool {
    marker(line, '<', "SEARCH")
}

fn is_separator(line: &str) -> bool {
    marker(line, '=', "")
}

fn is_replace(line: &str) -> bool {
    marker(line, '>', "REPLACE")
}

/// `old_text` as a patch, when `new_text` is empty, the same patch, or its other half.
fn patch(old: &str, new: &str) -> Result<Option<Reading>, String> {
    let lines = split_lines(old);
    if lines.iter().any(|l| is_search(l)) || new.lines().any(is_replace) {
        return search_replace(old, new);
    }
    if !(new.is_empty() || new == old) {
        return Ok(minus_plus_halves(old, new));
    }
    let first = lines.iter().position(|l| !l.trim().is_empty());
    if first.is_some_and(|i| lines[i].trim() == "*** Begin Patch") {
        return Ok(hunks(&lines, "a Codex patch"));
    }
    if lines.iter().any(|l| l.starts_with("@@")) {
        return Ok(hunks(&lines, "a unified diff"));
    }
    let body: Vec<&&str> = lines.iter().filter(|l| !l.is_empty()).collect();
    if !body.is_empty()
        && body.iter().all(|l| l.starts_with(['-', '+', ' ']))
        && body.iter().any(|l| l.starts_with('-'))
        && body.iter().any(|l| l.starts_with('+'))
    {
        return Ok(hunks(&lines, "-/+ lines"));
    }
    Ok(None)
}

/// `-` lines in `old_text` and `+` lines in `new_text`.
fn minus_plus_halves(old: &str, new: &str) -> Option<Reading> {
    let strip = |text: &str, sign: char| -> Option<String> {
        let lines = split_lines(text);
        if lines.is_empty() {
            return None;
        }
        let parts: Vec<&str> = lines
            .iter()
            .map(|l| l.strip_prefix(sign))
            .collect::<Option<_>>()?;
        Some(parts.join("\n"))
    };
    Some(Reading::one(
        strip(old, '-')?,
        strip(new, '+')?,
        Note::Patch("-/+ lines"),
    ))
}

/// Hunks of `-`, `+` and context lines; `@@` lines (with or without numbers, which are ignored)
/// and Codex's `*** …` lines separate them.
fn hunks(lines: &[&str], kind: &'static str) -> Option<Reading> {
    let mut edits = Vec::new();
    let mut old: Vec<&str> = Vec::new();
    let mut new: Vec<&str> = Vec::new();
    let mut flush = |old: &mut Vec<&str>, new: &mut Vec<&str>| {
        if !old.is_empty() || !new.is_empty() {
            edits.push((old.join("\n"), new.join("\n")));
        }
        old.clear();
        new.clear();
    };
    let mut started = false;
    for line in lines {
        if line.starts_with("@@") || line.starts_with("***") {
            flush(&mut old, &mut new);
            started = true;
            continue;
        }
        if !started
            && (line.starts_with("--- ")
                || line.starts_with("+++ ")
                || line.starts_with("diff ")
                || line.starts_with("index "))
        {
            continue;
        }
        if line.starts_with('\\') {
            continue;
        }
        started = true;
        match line.chars().next() {
            Some('-') => old.push(&line[1..]),
            Some('+') => new.push(&line[1..]),
            Some(' ') => {
                old.push(&line[1..]);
                new.push(&line[1..]);
            }
            None => {
                old.push("");
                new.push("");
            }
            Some(_) => return None,
        }
    }
    flush(&mut old, &mut new);
    if edits.is_empty() || edits.iter().any(|(o, _)| o.trim().is_empty()) {
        return None;
    }
    Some(Reading {
        edits,
        note: Note::Patch(kind),
        hint: None,
        whole_lines: false,
    })
}

/// SEARCH/REPLACE blocks in `old_text`, or split between `old_text` (the SEARCH half) and
/// `new_text` (the REPLACE half).
fn search_replace(old: &str, new: &str) -> Result<Option<Reading>, String> {
    let kind = "a SEARCH/REPLACE block";
    let whole = if split_lines(old).iter().any(|l| is_replace(l)) {
        if !(new.is_empty() || new == old) {
            return Ok(None);
        }
        old.to_string()
    } else {
        format!("{}\n{new}", old.trim_end_matches('\n'))
    };
    enum State {
        Outside,
        Search,
        Replace,
    }
    let mut state = State::Outside;
    let (mut search, mut replace): (Vec<&str>, Vec<&str>) = (Vec::new(), Vec::new());
    let mut edits = Vec::new();
    let mut header = false;
    for line in split_lines(&whole) {
        match state {
            State::Outside if is_search(line) => {
                state = State::Search;
                header = true;
            }
            State::Outside => {}
            State::Search if is_separator(line) => state = State::Replace,
            // Roo's `:start_line:` header and its `-------` line.
            State::Search
                if header
                    && (line.starts_with(":start_line:")
                        || line.starts_with(":end_line:")
                        || line.trim() == "-------") => {}
            State::Search if is_search(line) || is_replace(line) => {
                return Err(bad(kind, "a marker out of place"));
            }
            State::Search => {
                header = false;
                search.push(line);
            }
            State::Replace if is_replace(line) => {
                edits.push((search.join("\n"), replace.join("\n")));
                search.clear();
                replace.clear();
                state = State::Outside;
            }
            State::Replace if is_separator(line) => {
                return Err(bad(kind, "a second ======= line"));
            }
            State::Replace if is_search(line) => return Err(bad(kind, "a marker out of place")),
            State::Replace => replace.push(line),
        }
    }
    match state {
        State::Replace => edits.push((search.join("\n"), replace.join("\n"))),
        State::Search => return Ok(None),
        State::Outside => {}
    }
    if edits.is_empty() || edits.iter().any(|(o, _)| o.trim().is_empty()) {
        return Ok(None);
    }
    Ok(Some(Reading {
        edits,
        note: Note::Patch(kind),
        hint: None,
        whole_lines: false,
    }))
}

fn bad(kind: &str, what: &str) -> String {
    format!(
        "old_text looks like {kind} but has {what}; nothing was changed. Send the text to replace as old_text and its replacement as new_text"
    )
}

/// One level of escaping undone: `\n`, `\t`, `\r`, `\"`, `\'`, `` \` ``, `\$`, `\/`, `\\`;
/// a backslash before anything else stays.
fn unescape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('n') => out.push('\n'),
            Some('t') => out.push('\t'),
            Some('r') => out.push('\r'),
            Some(q @ ('"' | '\'' | '`' | '$' | '/' | '\\')) => out.push(q),
            Some(other) => {
                out.push('\\');
                out.push(other);
            }
            None => out.push('\\'),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn edits(old: &str, new: &str) -> Vec<(Vec<(String, String)>, Note)> {
        readings(old, new)
            .unwrap()
            .into_iter()
            .skip(1)
            .map(|r| (r.edits, r.note))
            .collect()
    }

    fn pair(o: &str, n: &str) -> Vec<(String, String)> {
        vec![(o.into(), n.into())]
    }

    #[test]
    fn line_number_prefixes() {
        for (old, stripped) in [
            ("   248\u{2192}\t\tx\n   249\u{2192}y", "\t\tx\ny"),
            ("1\timport os\n2\timport sys", "import os\nimport sys"),
            ("     2: beta\n     3:     gamma", "beta\n    gamma"),
            ("2 | line\n3 | ", "line\n"),
            ("00012| a", "a"),
        ] {
            assert_eq!(
                edits(old, ""),
                vec![(pair(stripped, ""), Note::Numbered { from_new: false })],
                "{old}"
            );
        }
        // Not consecutive, or not every line: not prefixes.
        assert!(edits("1: a\n3: b", "").is_empty());
        assert!(edits("1: a\nb", "").is_empty());
    }

    #[test]
    fn patches() {
        assert_eq!(
            edits("@@ -1,2 +1,2 @@\n a\n-b\n+c", ""),
            vec![(pair("a\nb", "a\nc"), Note::Patch("a unified diff"))]
        );
        assert_eq!(
            edits("<<<<<<< SEARCH\nx\n=======", "y\n>>>>>>> REPLACE"),
            vec![(pair("x", "y"), Note::Patch("a SEARCH/REPLACE block"))]
        );
        assert!(
            readings(
                "<<<<<<< SEARCH\nx\n=======\ny\n=======\nz\n>>>>>>> REPLACE",
                ""
            )
            .is_err()
        );
        // A Markdown list is not a patch.
        assert!(edits("- a\n- b", "- a\n- c").is_empty());
    }

    #[test]
    fn unescaping() {
        assert_eq!(unescape(r#"a\nb\"c\\d\qe"#), "a\nb\"c\\d\\qe");
    }
}
