//! Command lines as a shell splits them (`mm --ask "mm -acp -c 'acp.name=x'" …`,
//! `/ask "mm -acp" question`): words separated by whitespace, `'…'` taken literally, `"…"` with
//! `\"` and `\\`, and `\` escaping one character outside quotes. No variables, no globs: the
//! command runs without a shell.

use super::AgentError;

/// The words of a command line.
pub fn split_command_line(line: &str) -> Result<Vec<String>, AgentError> {
    let mut words = Vec::new();
    let mut rest = line;
    while let Some((word, after)) = next_word(rest)? {
        words.push(word);
        rest = after;
    }
    Ok(words)
}

/// The first word (quotes honoured) and the text after it, trimmed: `/ask AGENT question`.
/// `None` when there is no word.
pub fn split_first_word(text: &str) -> Result<Option<(String, &str)>, AgentError> {
    Ok(next_word(text)?.map(|(w, rest)| (w, rest.trim())))
}

fn next_word(text: &str) -> Result<Option<(String, &str)>, AgentError> {
    let text = text.trim_start();
    if text.is_empty() {
        return Ok(None);
    }
    let mut word = String::new();
    let mut chars = text.char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            c if c.is_whitespace() => return Ok(Some((word, &text[i..]))),
            '\'' => loop {
                match chars.next() {
                    Some((_, '\'')) => break,
                    Some((_, c)) => word.push(c),
                    None => return Err(AgentError::Unterminated),
                }
            },
            '"' => loop {
                match chars.next() {
                    Some((_, '"')) => break,
                    Some((_, '\\')) => match chars.next() {
                        Some((_, c @ ('"' | '\\'))) => word.push(c),
                        Some((_, c)) => {
                            word.push('\\');
                            word.push(c);
                        }
                        None => return Err(AgentError::Unterminated),
                    },
                    Some((_, c)) => word.push(c),
                    None => return Err(AgentError::Unterminated),
                }
            },
            '\\' => {
                if let Some((_, c)) = chars.next() {
                    word.push(c);
                }
            }
            c => word.push(c),
        }
    }
    Ok(Some((word, "")))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn words_with_quotes_and_escapes() {
        assert_eq!(
            split_command_line(r#"  mm -acp -c 'acp.name=a b' "x \"y\"" z\ w ''"#).unwrap(),
            ["mm", "-acp", "-c", "acp.name=a b", "x \"y\"", "z w", ""]
        );
        assert_eq!(split_command_line("   ").unwrap(), Vec::<String>::new());
        assert_eq!(
            split_command_line("mm 'oops"),
            Err(AgentError::Unterminated)
        );
    }

    #[test]
    fn the_first_word_and_the_rest() {
        assert_eq!(
            split_first_word(r#""mm -acp" what is  2+2? "#).unwrap(),
            Some(("mm -acp".to_string(), "what is  2+2?"))
        );
        assert_eq!(
            split_first_word("reviewer").unwrap(),
            Some(("reviewer".to_string(), ""))
        );
        assert_eq!(split_first_word("  ").unwrap(), None);
    }
}
