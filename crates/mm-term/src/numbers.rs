//! How the terminal shows counts of tokens and context windows (the banner, the recap line,
//! `/model`). Pure.

/// A token count: `340`, `1.2k`, `12k`, `1.3M`.
pub fn count(n: u64) -> String {
    if n < 1000 {
        n.to_string()
    } else if n < 10_000 {
        format!("{:.1}k", n as f64 / 1000.0)
    } else if n < 1_000_000 {
        format!("{}k", (n as f64 / 1000.0).round() as u64)
    } else {
        format!("{:.1}M", n as f64 / 1_000_000.0)
    }
}

/// A context window: `32k` for 32768 (windows are usually multiples of 1024), else as a count.
pub fn window(n: u64) -> String {
    if n >= 1024 && n.is_multiple_of(1024) {
        format!("{}k", n / 1024)
    } else {
        count(n)
    }
}
