//! Text from outside mm (the model's answer and reasoning, tool output, plans, forms, another
//! agent's questions, names and descriptions read from a project or a server, paths, error
//! texts) made safe to print on a terminal: nothing in it can move the cursor, erase a line,
//! set the clipboard (OSC 52), retitle the window or reorder what is shown.
//!
//! Every character that a terminal would act on instead of showing is shown visibly:
//!
//! | characters | shown as |
//! |---|---|
//! | C0 controls but newline and tab (U+0000–U+001F): ESC, BEL, CR, backspace… | caret notation: `^[`, `^G`, `^M`, `^H` |
//! | DEL (U+007F) | `^?` |
//! | C1 controls (U+0080–U+009F), such as the one-byte CSI U+009B | `<U+009B>` |
//! | bidirectional embeddings, overrides and isolates (U+202A–U+202E, U+2066–U+2069) | `<U+202E>` |
//!
//! A carriage return right before a newline (a CRLF line end) is dropped: it moves nothing the
//! newline does not. Newline and tab are kept; every other character (wide, combining, emoji,
//! the bidirectional *marks* U+200E, U+200F and U+061C, which act like any right-to-left or
//! left-to-right letter and hide nothing) is left as it is.
//!
//! Each character is judged alone, so text that arrives in pieces (a streamed answer) needs no
//! state: an escape sequence split across two pieces is shown the same way. mm's own styling is
//! added after this, never passed through it.

use std::borrow::Cow;

/// Whether `c` is shown otherwise than as itself.
pub fn escaped(c: char) -> bool {
    match c {
        '\n' | '\t' => false,
        '\u{0}'..='\u{1f}' | '\u{7f}' | '\u{80}'..='\u{9f}' => true,
        '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' => true,
        _ => false,
    }
}

/// Appends how `c` is shown: its visible form when [`escaped`], else `c` itself.
pub fn push_visible(c: char, out: &mut String) {
    match c {
        '\n' | '\t' => out.push(c),
        '\u{0}'..='\u{1f}' => {
            out.push('^');
            out.push(char::from(c as u8 + b'@'));
        }
        '\u{7f}' => out.push_str("^?"),
        c if escaped(c) => out.push_str(&format!("<U+{:04X}>", u32::from(c))),
        c => out.push(c),
    }
}

/// `text` as a terminal should show it; borrowed when nothing in it needs to change, which is
/// nearly always (a quick look at the bytes first: every character to change starts with a
/// byte below 0x20, 0x7F, 0xC2 (C1) or 0xE2 (the bidirectional controls)).
pub fn visible(text: &str) -> Cow<'_, str> {
    let suspect = |b: &u8| matches!(*b, 0..=0x08 | 0x0b..=0x1f | 0x7f | 0xc2 | 0xe2);
    if !text.as_bytes().iter().any(suspect) {
        return Cow::Borrowed(text);
    }
    let Some(first) = text.find(escaped) else {
        return Cow::Borrowed(text);
    };
    let mut out = String::with_capacity(text.len() + 16);
    out.push_str(&text[..first]);
    let mut chars = text[first..].chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\r' && chars.peek() == Some(&'\n') {
            continue;
        }
        push_visible(c, &mut out);
    }
    Cow::Owned(out)
}

/// [`visible`], owned.
pub fn visible_string(text: &str) -> String {
    visible(text).into_owned()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn escape_sequences_show_their_escape_as_caret_notation() {
        // OSC 52 (the clipboard), OSC 0 (the window's title), erase-line-and-return.
        assert_eq!(visible("\x1b]52;c;SGVsbG8=\x07"), "^[]52;c;SGVsbG8=^G");
        assert_eq!(visible("\x1b]0;title\x07"), "^[]0;title^G");
        assert_eq!(visible("ok\x1b[2K\rrm -rf ~"), "ok^[[2K^Mrm -rf ~");
        assert_eq!(visible("\x1b[31mred\x1b[0m"), "^[[31mred^[[0m");
    }

    #[test]
    fn each_class_of_control() {
        assert_eq!(visible("\0\x01\x08\x0b\x0c\x1f"), "^@^A^H^K^L^_");
        assert_eq!(visible("a\x7fb"), "a^?b");
        // C1: the one-byte CSI and OSC, and the ends of the range.
        assert_eq!(visible("\u{9b}2J\u{9d}"), "<U+009B>2J<U+009D>");
        assert_eq!(visible("\u{80}\u{9f}"), "<U+0080><U+009F>");
        // Bidirectional embeddings, overrides and isolates.
        assert_eq!(visible("a\u{202e}b"), "a<U+202E>b");
        let bidi: String = ('\u{202a}'..='\u{202e}')
            .chain('\u{2066}'..='\u{2069}')
            .collect();
        assert_eq!(
            visible(&bidi),
            "<U+202A><U+202B><U+202C><U+202D><U+202E><U+2066><U+2067><U+2068><U+2069>"
        );
    }

    #[test]
    fn newline_tab_and_crlf() {
        assert_eq!(visible("a\tb\nc\n"), "a\tb\nc\n");
        assert!(matches!(visible("a\tb\nc\n"), Cow::Borrowed(_)));
        // A CRLF line end is a line end; a lone CR is shown.
        assert_eq!(visible("one\r\ntwo\rthree\r"), "one\ntwo^Mthree^M");
    }

    #[test]
    fn everything_else_is_left_alone_and_borrowed() {
        for text in [
            "plain ascii",
            "wide 界 and emoji 🦀 and ✏️",
            "combining e\u{301} and a\u{308}",
            "the marks \u{200e}\u{200f}\u{61c} and a zero-width joiner 👩\u{200d}💻",
            "אבג عربي — “quotes” • bullets … ellipsis",
            "U+00A0 no-break\u{a0}space, U+00FF ÿ, U+2028\u{2028}",
            "",
        ] {
            let shown = visible(text);
            assert_eq!(shown, text);
            assert!(matches!(shown, Cow::Borrowed(_)), "{text:?} was copied");
        }
    }

    #[test]
    fn text_in_pieces_is_shown_as_the_whole() {
        let whole = "say \x1b]52;c;SGVsbG8=\x07 and \u{202e}drow";
        let at_once = visible(whole).into_owned();
        for cut in (0..=whole.len()).filter(|&i| whole.is_char_boundary(i)) {
            let (a, b) = whole.split_at(cut);
            assert_eq!(
                format!("{}{}", visible(a), visible(b)),
                at_once,
                "cut at {cut}"
            );
        }
    }
}
