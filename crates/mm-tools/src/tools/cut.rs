//! Cutting a long output to its head and tail, and the line that marks the cut.
//!
//! The marker says what was left out: `[… N characters omitted …]`, or
//! `[… N characters, K lines omitted …]` when the part cut held line breaks. The model reads it;
//! the terminal reads it back ([`parse_marker`]) to say exactly how many lines it does not show.

/// What a cut left out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Omitted {
    pub chars: usize,
    /// The line breaks in the part cut.
    pub lines: usize,
}

/// The marker line of a cut.
pub fn marker(chars: usize, lines: usize) -> String {
    match lines {
        0 => format!("[… {chars} characters omitted …]"),
        1 => format!("[… {chars} characters, 1 line omitted …]"),
        n => format!("[… {chars} characters, {n} lines omitted …]"),
    }
}

/// What a marker line says was left out; `None` for any other line.
pub fn parse_marker(line: &str) -> Option<Omitted> {
    let inner = line.strip_prefix("[… ")?.strip_suffix(" omitted …]")?;
    let (chars, rest) = inner.split_once(" characters")?;
    let chars = chars.parse().ok()?;
    let lines = match rest {
        "" => 0,
        ", 1 line" => 1,
        _ => rest
            .strip_prefix(", ")?
            .strip_suffix(" lines")?
            .parse()
            .ok()?,
    };
    Some(Omitted { chars, lines })
}

/// Characters of `text` not counting its marker lines (and the line breaks around them): an
/// output cut once is not cut again for the length its marker adds.
fn chars_without_markers(text: &str) -> usize {
    let mut n = text.chars().count();
    for line in text.split('\n') {
        if parse_marker(line).is_some() {
            n -= line.chars().count() + 2;
        }
    }
    n
}

/// Caps a result at `max` characters, keeping the head and the tail with the [`marker`] between
/// them. A text that a tool cut already is left as it is when what it kept fits.
pub fn cap_output(text: &str, max: usize) -> String {
    let n = text.chars().count();
    if n <= max || chars_without_markers(text) <= max {
        return text.to_string();
    }
    let head_n = max / 2;
    let tail_n = max - head_n;
    let omitted = n - head_n - tail_n;
    let head: String = text.chars().take(head_n).collect();
    let cut: String = text.chars().skip(head_n).take(omitted).collect();
    let tail: String = text.chars().skip(n - tail_n).collect();
    format!(
        "{head}\n{}\n{tail}",
        marker(omitted, line_breaks(cut.as_bytes()))
    )
}

/// The line breaks in some bytes of output.
pub fn line_breaks(bytes: &[u8]) -> usize {
    bytes.iter().filter(|&&b| b == b'\n').count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cap_keeps_head_and_tail() {
        assert_eq!(cap_output("abcdef", 10), "abcdef");
        assert_eq!(
            cap_output("abcdefghij", 4),
            "ab\n[… 6 characters omitted …]\nij"
        );
        assert_eq!(
            cap_output("1\n2\n3\n4\n5\n6\n7\n8\n9", 4),
            "1\n\n[… 13 characters, 6 lines omitted …]\n\n9"
        );
    }

    #[test]
    fn markers_read_back() {
        for (chars, lines) in [(6, 0), (19_000, 1), (52_341, 1_850)] {
            let omitted = parse_marker(&marker(chars, lines)).unwrap();
            assert_eq!(omitted.chars, chars);
            assert_eq!(omitted.lines, lines);
        }
        for line in [
            "[… six characters omitted …]",
            "… 6 characters omitted",
            "[… 6 characters, x lines omitted …]",
        ] {
            assert_eq!(parse_marker(line), None, "{line}");
        }
    }

    #[test]
    fn a_cut_output_is_not_cut_again_for_its_marker() {
        let once = cap_output(&"a".repeat(5000), 1000);
        assert_eq!(cap_output(&once, 1000), once);
    }
}
