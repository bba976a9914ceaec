//! ANSI styling, applied only when colour is on (the flag is passed in, never read globally).

pub const RESET: &str = "\x1b[0m";
pub const BOLD: &str = "\x1b[1m";
pub const DIM: &str = "\x1b[2m";
pub const ITALIC: &str = "\x1b[3m";
pub const RED: &str = "\x1b[31m";
pub const GREEN: &str = "\x1b[32m";
pub const YELLOW: &str = "\x1b[33m";
pub const BLUE: &str = "\x1b[34m";
pub const MAGENTA: &str = "\x1b[35m";
pub const CYAN: &str = "\x1b[36m";

/// Wraps `text` in `code` … reset when `color` is on; returns it unchanged otherwise.
pub fn paint(color: bool, code: &str, text: &str) -> String {
    if color && !text.is_empty() {
        format!("{code}{text}{RESET}")
    } else {
        text.to_string()
    }
}

pub fn dim(color: bool, text: &str) -> String {
    paint(color, DIM, text)
}

pub fn red(color: bool, text: &str) -> String {
    paint(color, RED, text)
}

pub fn yellow(color: bool, text: &str) -> String {
    paint(color, YELLOW, text)
}

pub fn bold(color: bool, text: &str) -> String {
    paint(color, BOLD, text)
}

/// `text` with the colours of its SGR sequences taken out and the other attributes (bold, dim,
/// italic, reset) kept: `NO_COLOR` means no colour, not no layout (no-color.org). A sequence
/// left with nothing is dropped.
pub fn without_colour(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("\x1b[") {
        out.push_str(&rest[..at]);
        let after = &rest[at + 2..];
        let Some(end) = after.find(|c: char| !(c.is_ascii_digit() || c == ';')) else {
            out.push_str(&rest[at..]);
            return out;
        };
        if !after[end..].starts_with('m') {
            out.push_str(&rest[at..at + 2 + end + 1]);
            rest = &after[end + 1..];
            continue;
        }
        let kept = kept_attributes(&after[..end]);
        if !kept.is_empty() {
            out.push_str(&format!("\x1b[{kept}m"));
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    out
}

/// The parameters of one SGR sequence without its colours (`38;5;n`, `48;2;r;g;b` whole).
fn kept_attributes(params: &str) -> String {
    let mut kept: Vec<&str> = Vec::new();
    let mut it = params.split(';');
    while let Some(p) = it.next() {
        let n: u16 = p.parse().unwrap_or(0);
        match n {
            30..=37 | 39 | 40..=47 | 49 | 90..=97 | 100..=107 => {}
            38 | 48 => match it.next() {
                Some("5") => {
                    it.next();
                }
                Some("2") => {
                    it.next();
                    it.next();
                    it.next();
                }
                _ => {}
            },
            _ => kept.push(p),
        }
    }
    kept.join(";")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_colour_keeps_the_attributes_and_drops_the_colours() {
        let painted =
            format!("{BOLD}{MAGENTA}Title{RESET} \x1b[1;48;5;52;31mx\x1b[0m {CYAN}y{RESET}");
        assert_eq!(
            without_colour(&painted),
            "\x1b[1mTitle\x1b[0m \x1b[1mx\x1b[0m y\x1b[0m"
        );
        assert_eq!(without_colour("plain"), "plain");
    }
}
