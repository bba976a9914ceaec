//! Positions and file URIs: the model counts lines and columns from 1 in characters, a language
//! server counts from 0 in UTF-16 code units (the protocol's default encoding).

use std::path::{Path, PathBuf};

use lsp_types::{Position, TextEdit};

/// The `file://` URI of an absolute path. A path `url` takes for no file path (a relative one,
/// or one without a drive on Windows) is written with `/` separators under the root, escaped
/// all the same (`file:///a%20dir/x.py`).
pub fn uri_of(path: &Path) -> String {
    match url::Url::from_file_path(path) {
        Ok(u) => u.to_string(),
        Err(()) => {
            let path = crate::paths::for_model(path);
            // The base always parses: the other arm is never taken.
            url::Url::parse("file:///").map_or_else(
                |_| format!("file:///{path}"),
                |mut u| {
                    u.set_path(&path);
                    u.to_string()
                },
            )
        }
    }
}

/// The path of a `file://` URI; `None` for other schemes.
pub fn path_of(uri: &str) -> Option<PathBuf> {
    url::Url::parse(uri).ok()?.to_file_path().ok()
}

/// The lines of a text as the protocol counts them (`\n`, `\r\n` or `\r` end a line), without
/// their ends.
pub fn lines(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'\n' => {
                out.push(&text[start..i]);
                start = i + 1;
            }
            b'\r' => {
                out.push(&text[start..i]);
                if bytes.get(i + 1) == Some(&b'\n') {
                    i += 1;
                }
                start = i + 1;
            }
            _ => {}
        }
        i += 1;
    }
    out.push(&text[start..]);
    out
}

/// The UTF-16 offset of the character at `col` (0-based, in characters) of a line; past the
/// end, the end.
pub fn utf16_of_char(line: &str, col: usize) -> u32 {
    line.chars().take(col).map(|c| c.len_utf16() as u32).sum()
}

/// The character index (0-based) of a UTF-16 offset in a line; past the end, the end.
pub fn char_of_utf16(line: &str, utf16: u32) -> usize {
    let mut units = 0u32;
    for (i, c) in line.chars().enumerate() {
        if units >= utf16 {
            return i;
        }
        units += c.len_utf16() as u32;
    }
    line.chars().count()
}

/// The byte offset in `text` of a protocol position (clamped to the text).
pub fn byte_offset(text: &str, pos: Position) -> usize {
    let mut line_start = 0;
    let mut line = 0u32;
    let bytes = text.as_bytes();
    let mut i = 0;
    while line < pos.line {
        if i >= bytes.len() {
            return text.len();
        }
        match bytes[i] {
            b'\n' => {
                line += 1;
                line_start = i + 1;
            }
            b'\r' => {
                if bytes.get(i + 1) == Some(&b'\n') {
                    i += 1;
                }
                line += 1;
                line_start = i + 1;
            }
            _ => {}
        }
        i += 1;
    }
    let rest = &text[line_start..];
    let line_len = rest.find(['\r', '\n']).unwrap_or(rest.len());
    let mut units = 0u32;
    for (off, c) in rest[..line_len].char_indices() {
        if units >= pos.character {
            return line_start + off;
        }
        units += c.len_utf16() as u32;
    }
    line_start + line_len
}

/// Applies text edits (non-overlapping, in any order) to a text.
pub fn apply_edits(text: &str, edits: &[TextEdit]) -> Result<String, String> {
    let mut spans: Vec<(usize, usize, &str)> = edits
        .iter()
        .map(|e| {
            (
                byte_offset(text, e.range.start),
                byte_offset(text, e.range.end),
                e.new_text.as_str(),
            )
        })
        .collect();
    spans.sort_by_key(|s| (s.0, s.1));
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for (start, end, new) in spans {
        if start < at || end < start {
            return Err("the server sent overlapping edits".into());
        }
        out.push_str(&text[at..start]);
        out.push_str(new);
        at = end;
    }
    out.push_str(&text[at..]);
    Ok(out)
}

/// A 1-based `line:col` in characters of a protocol position, given the file's lines.
pub fn human(lines: &[&str], pos: Position) -> (usize, usize) {
    let col = lines
        .get(pos.line as usize)
        .map_or(pos.character as usize, |l| char_of_utf16(l, pos.character));
    (pos.line as usize + 1, col + 1)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use lsp_types::Range;

    fn pos(line: u32, character: u32) -> Position {
        Position { line, character }
    }

    #[test]
    fn utf16_columns_count_astral_characters_twice() {
        let line = "a😀b";
        assert_eq!(utf16_of_char(line, 2), 3);
        assert_eq!(char_of_utf16(line, 3), 2);
        assert_eq!(char_of_utf16(line, 99), 3);
    }

    #[test]
    fn edits_apply_on_crlf_and_unicode_text() {
        let text = "é foo\r\nfoo();\n";
        let edits = vec![
            TextEdit {
                range: Range {
                    start: pos(1, 0),
                    end: pos(1, 3),
                },
                new_text: "bar".into(),
            },
            TextEdit {
                range: Range {
                    start: pos(0, 2),
                    end: pos(0, 5),
                },
                new_text: "bar".into(),
            },
        ];
        assert_eq!(apply_edits(text, &edits).unwrap(), "é bar\r\nbar();\n");
        assert_eq!(lines(text), vec!["é foo", "foo();", ""]);
    }

    #[test]
    fn file_uris_round_trip_with_spaces() {
        // Absolute on every system (`C:\\…\\Temp` on Windows).
        let p = std::env::temp_dir().join("a dir").join("x.py");
        let uri = uri_of(&p);
        assert!(uri.starts_with("file:///"), "{uri}");
        assert!(uri.ends_with("/a%20dir/x.py"), "{uri}");
        assert_eq!(path_of(&uri).unwrap(), p);
    }

    /// A path that is no file path for `url` (relative; on Windows one without a drive) is
    /// escaped too.
    #[test]
    fn the_fallback_uri_is_escaped() {
        assert_eq!(
            uri_of(Path::new("a dir/x#1.py")),
            "file:///a%20dir/x%231.py"
        );
    }
}
