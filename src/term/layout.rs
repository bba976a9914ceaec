//! How the prompt's line is laid out on a window of a given width, and the bytes that draw it:
//! pure, unit-tested (screen.rs writes them).

use unicode_width::UnicodeWidthChar;

/// How a character is shown in the prompt (the line may hold a pasted or completed name with
/// escapes in it: shown visibly, sanitize.rs), and its width.
fn shown(c: char) -> (String, usize) {
    match c {
        '\t' => ("    ".to_string(), 4),
        c if crate::sanitize::escaped(c) => {
            let mut s = String::new();
            crate::sanitize::push_visible(c, &mut s);
            let w = s.len();
            (s, w)
        }
        c => (c.to_string(), c.width().unwrap_or(0)),
    }
}

/// A candidate as [`columns`] shows it, and its width.
fn shown_item(item: &str) -> (String, usize) {
    item.chars()
        .map(shown)
        .fold((String::new(), 0), |(mut s, w), (c, cw)| {
            s.push_str(&c);
            (s, w + cw)
        })
}

/// A prompt laid out for a window `width` columns wide: the text to write (lines separated by
/// `\n`), and where the cursor and the end of the text are (rows from the first row).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame {
    pub text: String,
    pub cursor: (usize, usize),
    pub end: (usize, usize),
    /// The text fills its last row exactly and the cursor is after it: a new row must be made
    /// for the cursor (the terminal waits at the last column until the next character).
    pub cursor_on_new_row: bool,
}

/// Lays out `buf` after `prompt` (continuation lines after as many spaces), the cursor at byte
/// `cursor`.
pub fn frame(prompt: &str, buf: &str, cursor: usize, width: usize) -> Frame {
    let width = width.max(1);
    let indent = " ".repeat(prompt.chars().map(|c| shown(c).1).sum());
    let (mut row, mut col) = (0usize, 0usize);
    let mut text = String::new();
    let mut at_cursor = None;
    let place = |text: &mut String, row: &mut usize, col: &mut usize, c: char| {
        let (s, w) = shown(c);
        if w > 0 && *col + w > width {
            *row += 1;
            *col = 0;
        }
        text.push_str(&s);
        *col += w;
    };
    let mut offset = 0;
    for (n, line) in buf.split('\n').enumerate() {
        if n > 0 {
            text.push('\n');
            row += 1;
            col = 0;
        }
        for c in if n == 0 { prompt } else { indent.as_str() }.chars() {
            place(&mut text, &mut row, &mut col, c);
        }
        for (i, c) in line.char_indices() {
            if offset + i == cursor {
                at_cursor = Some(normal(row, col, width));
            }
            place(&mut text, &mut row, &mut col, c);
        }
        if offset + line.len() == cursor {
            at_cursor = Some(normal(row, col, width));
        }
        offset += line.len() + 1;
    }
    let end = (row, col);
    let cursor_pos = at_cursor.unwrap_or_else(|| normal(row, col, width));
    Frame {
        text,
        cursor: cursor_pos,
        end,
        cursor_on_new_row: cursor_pos.0 > end.0,
    }
}

/// A position past the last column is the start of the next row.
fn normal(row: usize, col: usize, width: usize) -> (usize, usize) {
    if col >= width {
        (row + 1, 0)
    } else {
        (row, col)
    }
}

/// The bytes that redraw a prompt: up to its first row (the cursor is `cursor_row` rows below
/// it), clear to the end of the screen, the text, then the cursor put in place. Returns them
/// and the cursor's row.
pub fn draw(cursor_row: usize, frame: &Frame) -> (String, usize) {
    let mut s = String::from("\x1b[?2026h");
    if cursor_row > 0 {
        s.push_str(&format!("\x1b[{cursor_row}A"));
    }
    s.push_str("\r\x1b[J");
    s.push_str(&frame.text);
    let mut row = frame.end.0;
    if frame.cursor_on_new_row {
        s.push('\n');
        row += 1;
    }
    if row > frame.cursor.0 {
        s.push_str(&format!("\x1b[{}A", row - frame.cursor.0));
    }
    s.push('\r');
    if frame.cursor.1 > 0 {
        s.push_str(&format!("\x1b[{}C", frame.cursor.1));
    }
    s.push_str("\x1b[?2026l");
    (s, frame.cursor.0)
}

/// The bytes that leave a drawn prompt: the cursor to a new line below its text, after `mark`
/// (`^C`, or nothing).
pub fn leave(cursor_row: usize, frame: &Frame, mark: &str) -> String {
    let mut s = String::new();
    let end_row = if frame.cursor_on_new_row {
        frame.end.0 + 1
    } else {
        frame.end.0
    };
    if end_row > cursor_row {
        s.push_str(&format!("\x1b[{}B", end_row - cursor_row));
    }
    if frame.cursor_on_new_row {
        s.push('\r');
    } else {
        // To the end of the text's last row.
        s.push('\r');
        let col = frame.end.1;
        if col > 0 {
            s.push_str(&format!("\x1b[{col}C"));
        }
    }
    s.push_str(mark);
    s.push('\n');
    s
}

/// Candidates in columns, as many as fit in `width`.
pub fn columns(items: &[String], width: usize) -> Vec<String> {
    let items: Vec<(String, usize)> = items.iter().map(|i| shown_item(i)).collect();
    let widest = items.iter().map(|(_, w)| *w).max().unwrap_or(0) + 2;
    let per_row = (width / widest.max(1)).max(1);
    let rows = items.len().div_ceil(per_row);
    (0..rows)
        .map(|r| {
            let mut line = String::new();
            for c in 0..per_row {
                if let Some((item, w)) = items.get(c * rows + r) {
                    line.push_str(item);
                    line.push_str(&" ".repeat(widest - w));
                }
            }
            line.trim_end().to_string()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn frames_wrap_long_lines_and_wide_characters() {
        let f = frame("> ", "abcdefgh", 3, 5);
        assert_eq!(f.text, "> abcdefgh");
        assert_eq!(
            (f.cursor, f.end, f.cursor_on_new_row),
            ((1, 0), (1, 5), false)
        );
        // The text fills the row exactly, the cursor after it: a new row for the cursor.
        let f = frame("> ", "abc", 3, 5);
        assert_eq!(
            (f.cursor, f.end, f.cursor_on_new_row),
            ((1, 0), (0, 5), true)
        );
        // A wide character that does not fit goes to the next row whole.
        let f = frame("> ", "ab界", 4, 5);
        assert_eq!((f.cursor, f.end), ((1, 2), (1, 2)));
        let f = frame("> ", "one\ntwo", 1, 80);
        assert_eq!(f.text, "> one\n  two");
        assert_eq!((f.cursor, f.end), ((0, 3), (1, 5)));
    }

    #[test]
    fn drawing_goes_up_clears_writes_and_places_the_cursor() {
        let f = frame("> ", "one\ntwo", 1, 80);
        let (s, row) = draw(1, &f);
        assert_eq!(
            s,
            "\x1b[?2026h\x1b[1A\r\x1b[J> one\n  two\x1b[1A\r\x1b[3C\x1b[?2026l"
        );
        assert_eq!(row, 0);
        assert_eq!(leave(0, &f, "^C"), "\x1b[1B\r\x1b[5C^C\n");
    }

    #[test]
    fn candidates_in_columns() {
        let items: Vec<String> = ["a", "bb", "ccc", "d"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        assert_eq!(columns(&items, 10), vec!["a    ccc", "bb   d"]);
        // A file named with an escape in it is listed, not acted on.
        let items = vec!["\x1b]0;x\x07.txt".to_string(), "b".to_string()];
        assert_eq!(columns(&items, 40), vec!["^[]0;x^G.txt  b"]);
    }
}
