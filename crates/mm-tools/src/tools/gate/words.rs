//! A command's words as bash reads them, for the gate's rules: split at unquoted blanks, with
//! quotes and backslashes removed, and whether the shell would expand a word into others. A
//! rule only ever matches a command that chains, redirects and substitutes nothing
//! ([`chains`]), so this knows quotes and backslashes and nothing else of bash.

/// One word of a command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Word {
    /// As written, quotes kept: what an exact rule compares.
    pub raw: String,
    /// As the program receives it, quotes and backslashes removed.
    pub text: String,
    /// It holds an unquoted `*`, `?`, `[`, `{` or a leading `~`: the shell turns it into words
    /// nobody saw (a file named `--output=x` matches `*`).
    pub expands: bool,
}

/// Whether a command chains, redirects or substitutes: a `;`, `&`, `|`, `<`, `>`, `` ` ``,
/// `$`, parenthesis or line end anywhere, even quoted (a rule errs on the side of asking).
pub fn chains(command: &str) -> bool {
    command.chars().any(|c| {
        matches!(
            c,
            ';' | '&' | '|' | '<' | '>' | '`' | '$' | '\n' | '\r' | '(' | ')'
        )
    })
}

/// The words of `command`; `None` when a quote is left open, it ends with a backslash, or a
/// comment starts (`#` at a word's start: what follows is not run, and not matched either).
pub fn split(command: &str) -> Option<Vec<Word>> {
    let mut words = Vec::new();
    let mut word: Option<Word> = None;
    let mut chars = command.chars();
    while let Some(c) = chars.next() {
        if c.is_whitespace() {
            words.extend(word.take());
            continue;
        }
        let starts = word.is_none();
        let w = word.get_or_insert_with(|| Word {
            raw: String::new(),
            text: String::new(),
            expands: false,
        });
        w.raw.push(c);
        match c {
            '\'' => loop {
                let q = chars.next()?;
                w.raw.push(q);
                if q == '\'' {
                    break;
                }
                w.text.push(q);
            },
            '"' => loop {
                let q = chars.next()?;
                w.raw.push(q);
                match q {
                    '"' => break,
                    '\\' => {
                        let e = chars.next()?;
                        w.raw.push(e);
                        // Inside double quotes a backslash escapes only these.
                        if !matches!(e, '"' | '\\' | '$' | '`') {
                            w.text.push('\\');
                        }
                        w.text.push(e);
                    }
                    _ => w.text.push(q),
                }
            },
            '\\' => {
                let e = chars.next()?;
                w.raw.push(e);
                w.text.push(e);
            }
            '#' if starts => return None,
            '*' | '?' | '[' | '{' => {
                w.expands = true;
                w.text.push(c);
            }
            '~' if starts => {
                w.expands = true;
                w.text.push(c);
            }
            _ => w.text.push(c),
        }
    }
    words.extend(word);
    Some(words)
}

/// What an exact rule remembers of a command: its words as written, one space apart (so
/// `git  log` is `git log`, and `ls '*'` is not `ls *`); the command trimmed when it cannot be
/// split.
pub fn exact(command: &str) -> String {
    match split(command) {
        Some(words) => words
            .iter()
            .map(|w| w.raw.as_str())
            .collect::<Vec<_>>()
            .join(" "),
        None => command.trim().to_string(),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn texts(command: &str) -> Vec<String> {
        split(command)
            .unwrap()
            .into_iter()
            .map(|w| w.text)
            .collect()
    }

    #[test]
    fn quotes_and_backslashes_are_removed_as_bash_does() {
        assert_eq!(texts("git  log\t-1"), ["git", "log", "-1"]);
        assert_eq!(
            texts("grep 'a b' \"c d\" e\\ f"),
            ["grep", "a b", "c d", "e f"]
        );
        // What a program receives: `--output=x`, however it was spelled.
        assert_eq!(
            texts("git log \\-\\-output=x"),
            ["git", "log", "--output=x"]
        );
        assert_eq!(texts("git log '--out'put=x"), ["git", "log", "--output=x"]);
        assert_eq!(
            texts("git log \"--o\"utput=x"),
            ["git", "log", "--output=x"]
        );
        assert_eq!(texts(r#"echo "a\"b\n""#), ["echo", "a\"b\\n"]);
        assert_eq!(texts("echo '' x"), ["echo", "", "x"]);
        assert_eq!(split("echo 'open"), None);
        assert_eq!(split("echo \"open"), None);
        assert_eq!(split("echo x\\"), None);
        assert_eq!(split("ls # a comment"), None);
        assert_eq!(texts("ls a#b"), ["ls", "a#b"]);
    }

    #[test]
    fn a_word_the_shell_would_expand_is_marked() {
        let expands = |command: &str| -> Vec<bool> {
            split(command)
                .unwrap()
                .into_iter()
                .map(|w| w.expands)
                .collect()
        };
        assert_eq!(
            expands("ls *.rs '*.rs' a?b \"[x]\" {a,b} ~/x a~"),
            [false, true, false, true, false, true, true, false]
        );
    }

    #[test]
    fn exact_keeps_the_words_as_written() {
        assert_eq!(exact("  make   build  "), "make build");
        assert_eq!(exact("ls '*'"), "ls '*'");
        assert_ne!(exact("ls '*'"), exact("ls *"));
        assert_eq!(exact("echo 'open"), "echo 'open");
    }

    #[test]
    fn anything_that_chains_is_seen_even_quoted() {
        for command in [
            "a; b", "a && b", "a | b", "a > f", "a < f", "a `b`", "a $(b)", "a $X", "a\nb", "(a)",
            "a '|' b",
        ] {
            assert!(chains(command), "{command}");
        }
        assert!(!chains("git log -1 --format=%H"));
    }
}
