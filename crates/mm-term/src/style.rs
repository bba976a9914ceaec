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
