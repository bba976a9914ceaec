//! The refusal when nothing matches, written to teach: the file's lines most like `old_text`,
//! numbered, and the first difference made visible — a caret under it, and the characters that
//! look alike or cannot be seen named (`U+00A0 no-break space`, `1 tab` against `4 spaces`).
//!
//! Finding them in a large file stays linear: the windows scored exactly are the few that the
//! words of `old_text` vote for (found with a SIMD substring search), or, when no word helps (a
//! word mistyped), those that lines with a close 128-bit sketch of their character pairs vote for.

use std::collections::HashMap;

use super::keys::is_word;
use super::locate::Locator;
use super::text::{Text, split_lines};

/// Lines of context shown around the closest lines.
const CONTEXT: usize = 2;
/// The most lines of the file shown.
const SHOWN: usize = 24;
/// The most windows scored exactly.
const WINDOWS: usize = 64;
/// The most lines of `old_text` that vote for windows by their sketch (the longest ones).
const VOTERS: usize = 8;
/// The most words of `old_text` that vote for windows (the longest ones), and the most lines
/// a word may be on to vote.
const WORDS: usize = 6;
const WORD_LINES: usize = 2_000;

type Sketch = [u64; 2];

/// A line's pairs of bytes (without its indentation and trailing blanks), hashed into 128 bits:
/// a cheap picture of what the line says, for finding lines alike in a file of any size in one
/// pass.
fn sketch(line: &str) -> Sketch {
    let mut s = [0u64; 2];
    for w in line.trim().as_bytes().windows(2) {
        let bit = ((u32::from(w[0]) << 8) | u32::from(w[1])).wrapping_mul(0x9E37_79B1) >> 25;
        s[(bit >> 6) as usize] |= 1 << (bit & 63);
    }
    s
}

fn count(s: &Sketch) -> u32 {
    s[0].count_ones() + s[1].count_ones()
}

fn pairs(line: &str) -> impl Iterator<Item = (char, char)> + '_ {
    let t = line.trim();
    t.chars().zip(t.chars().skip(1))
}

/// Dice similarity of two lines' character pairs (their trimmed text); 1 when equal.
fn similarity(a: &str, b: &str) -> f64 {
    let (a, b) = (a.trim(), b.trim());
    if a == b {
        return 1.0;
    }
    let mut x: Vec<(char, char)> = pairs(a).collect();
    let mut y: Vec<(char, char)> = pairs(b).collect();
    if x.is_empty() || y.is_empty() {
        return 0.0;
    }
    x.sort_unstable();
    y.sort_unstable();
    let (mut i, mut j, mut common) = (0, 0, 0);
    while i < x.len() && j < y.len() {
        match x[i].cmp(&y[j]) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                common += 1;
                i += 1;
                j += 1;
            }
        }
    }
    2.0 * f64::from(common) / (x.len() + y.len()) as f64
}

/// The refusal for an `old_text` that matches nothing.
pub fn not_found(found: &Locator, old: &str, shown: &str) -> String {
    let text = found.text();
    let nothing = format!(
        "old_text does not match {shown}, and no line of the file looks like it; read the file and copy old_text exactly"
    );
    let old_lines = split_lines(old);
    let Some(start) = closest(found, &old_lines) else {
        return nothing;
    };
    let k = old_lines.len();
    let end = (start + k).min(text.line_count());
    let differs = (start..end).find(|&i| text.line(i) != old_lines[i - start]);
    let from = start
        .saturating_sub(CONTEXT)
        .max(differs.unwrap_or(start).saturating_sub(SHOWN / 2));
    let to = (end + CONTEXT).min(text.line_count()).min(from + SHOWN);
    let mut out = format!("old_text does not match {shown}; the closest lines are:\n");
    for i in from..to {
        out.push_str(&format!("{}: {}\n", i + 1, text.line(i)));
    }
    if let Some(i) = differs {
        out.push_str(&difference(
            text.line(i),
            old_lines[i - start],
            i + 1,
            i - start + 1,
        ));
    }
    out.push_str("Copy old_text exactly from the file.");
    out
}

/// The first line of the window most like `old_lines`, if one is alike enough: at least half of
/// `old_text`'s lines must look like the file's, so that a block with only its first line in
/// common (another function of the same shape) is never offered. The windows scored are the
/// ones `old_text`'s words vote for; when they find nothing (a word mistyped), the ones each
/// line's sketch of character pairs votes for.
fn closest(found: &Locator, old_lines: &[&str]) -> Option<usize> {
    let text = found.text();
    if text.line_count() == 0 {
        return None;
    }
    best(text, old_lines, word_votes(found, old_lines))
        .or_else(|| best(text, old_lines, sketch_votes(text, old_lines)))
}

/// Windows the words of `old_text` (its longest, on not too many lines) put its lines beside.
fn word_votes(found: &Locator, old_lines: &[&str]) -> Vec<(usize, u32)> {
    let mut words: Vec<&str> = old_lines
        .iter()
        .flat_map(|l| l.split(|c: char| !is_word(c)))
        .filter(|w| w.chars().count() >= 3)
        .collect();
    words.sort_by_key(|w| std::cmp::Reverse(w.len()));
    words.dedup();
    let mut votes: HashMap<usize, u32> = HashMap::new();
    for word in words.into_iter().take(WORDS) {
        let Some(lines) = found.lines_with(word).filter(|l| l.len() <= WORD_LINES) else {
            continue;
        };
        for (j, old) in old_lines.iter().enumerate() {
            if !old.contains(word) {
                continue;
            }
            for &c in &lines {
                if c >= j {
                    *votes.entry(c - j).or_default() += 1;
                }
            }
        }
    }
    votes.into_iter().collect()
}

/// Windows the lines whose sketch shares half its pairs with a line of `old_text` put it beside.
fn sketch_votes(text: &Text, old_lines: &[&str]) -> Vec<(usize, u32)> {
    let mut wanted: Vec<(usize, &str)> = old_lines
        .iter()
        .enumerate()
        .filter(|(_, l)| l.trim().chars().count() >= 2)
        .map(|(j, l)| (j, *l))
        .collect();
    wanted.sort_by_key(|(_, l)| std::cmp::Reverse(l.trim().len()));
    wanted.truncate(VOTERS);
    let wanted: Vec<(usize, Sketch, u32)> = wanted
        .into_iter()
        .map(|(j, l)| {
            let s = sketch(l);
            (j, s, count(&s))
        })
        .collect();
    let mut votes = vec![0u32; text.line_count()];
    // A line with fewer pairs than half the smallest set cannot be alike: not even sketched.
    let shortest = wanted.iter().map(|&(_, _, w)| w).min().unwrap_or(0) as usize;
    for i in 0..text.line_count() {
        let line = text.line(i);
        if line.len() < shortest / 2 + 1 {
            continue;
        }
        let have = sketch(line);
        let c = count(&have);
        for &(j, want, w) in &wanted {
            // Half the pairs of the larger set in common needs sizes within a factor of two.
            if c * 2 < w || c > w * 2 || i < j {
                continue;
            }
            let common = (have[0] & want[0]).count_ones() + (have[1] & want[1]).count_ones();
            if common * 2 >= w.max(c) {
                votes[i - j] += 1;
            }
        }
    }
    votes
        .into_iter()
        .enumerate()
        .filter(|&(_, v)| v > 0)
        .collect()
}

/// The best of the most voted windows, if alike enough.
fn best(text: &Text, old_lines: &[&str], mut starts: Vec<(usize, u32)>) -> Option<usize> {
    let n = text.line_count();
    let by_votes = |&(s, v): &(usize, u32)| (std::cmp::Reverse(v), s);
    if starts.len() > WINDOWS {
        starts.select_nth_unstable_by_key(WINDOWS, by_votes);
        starts.truncate(WINDOWS);
    }
    starts.sort_by_key(by_votes);
    let k = old_lines.len();
    let meaningful = old_lines
        .iter()
        .filter(|l| !l.trim().is_empty())
        .count()
        .max(1);
    let mut best: Option<(f64, usize)> = None;
    for (s, _) in starts {
        let s = s.min(n.saturating_sub(k));
        let sims: Vec<f64> = (0..k.min(n - s))
            .filter(|&j| !old_lines[j].trim().is_empty())
            .map(|j| similarity(text.line(s + j), old_lines[j]))
            .collect();
        let alike = sims.iter().filter(|&&x| x >= 0.5).count();
        let score: f64 = sims.iter().sum();
        if alike * 2 >= meaningful && best.is_none_or(|(b, at)| score > b || (score == b && s < at))
        {
            best = Some((score, s));
        }
    }
    best.map(|(_, s)| s)
}

/// Where file line `line` (number `at`) first differs from `old_text`'s line `wanted`
/// (number `nth`), with a caret under it and what cannot be seen named. A different indentation
/// alone is named as such; otherwise the text after the indentation is compared, since a model
/// may leave the indentation out of `old_text` on purpose.
fn difference(line: &str, wanted: &str, at: usize, nth: usize) -> String {
    let (hi, wi) = (indent_len(line), indent_len(wanted));
    let (body, want_body) = (&line[hi..], &wanted[wi..]);
    if body == want_body {
        let caret = caret(&line[..common(line, wanted)]);
        return format!(
            "Line {at} differs from line {nth} of old_text in its indentation:\n  file:     {line}\n            {caret}^\n  old_text: {wanted}\nThe file indents this line with {}, old_text with {}.\n",
            whitespace(&line[..hi]),
            whitespace(&wanted[..wi])
        );
    }
    let d = common(body, want_body);
    let caret = caret(&line[..hi + d]);
    let mut out = format!(
        "Line {at} differs from line {nth} of old_text at the caret:\n  file:     {line}\n            {caret}^\n  old_text: {wanted}\n"
    );
    let (rest, want_rest) = (&body[d..], &want_body[d..]);
    let why = match (rest.chars().next(), want_rest.chars().next()) {
        (Some(h), Some(w)) if unusual(h) || unusual(w) => Some(format!(
            "At the caret the file has {}, old_text has {}.",
            name(h),
            name(w)
        )),
        (Some(_), None) if rest.trim().is_empty() => Some(format!(
            "The file's line ends with {} more.",
            whitespace(rest)
        )),
        (None, Some(_)) if want_rest.trim().is_empty() => Some(format!(
            "old_text's line ends with {} more.",
            whitespace(want_rest)
        )),
        _ => None,
    };
    if let Some(why) = why {
        out.push_str(&why);
        out.push('\n');
    }
    out
}

fn indent_len(line: &str) -> usize {
    line.len() - line.trim_start().len()
}

/// The byte length of the longest common prefix of `a` and `b`.
fn common(a: &str, b: &str) -> usize {
    a.char_indices()
        .zip(b.chars())
        .find(|((_, x), y)| x != y)
        .map_or(a.len().min(b.len()), |((i, _), _)| i)
}

/// Blanks as wide as `before` (tabs kept, so that the caret lines up under a tab too).
fn caret(before: &str) -> String {
    before
        .chars()
        .map(|c| if c == '\t' { '\t' } else { ' ' })
        .collect()
}

/// `3 tabs`, `4 spaces`, `1 tab and 2 spaces`, `no indentation`.
fn whitespace(ws: &str) -> String {
    if ws.is_empty() {
        return "no indentation".into();
    }
    let tabs = ws.chars().filter(|&c| c == '\t').count();
    let spaces = ws.chars().filter(|&c| c == ' ').count();
    let others: Vec<String> = ws
        .chars()
        .filter(|&c| c != '\t' && c != ' ')
        .map(name)
        .collect();
    let plural = |n: usize, what: &str| format!("{n} {what}{}", if n == 1 { "" } else { "s" });
    let mut parts = Vec::new();
    if tabs > 0 {
        parts.push(plural(tabs, "tab"));
    }
    if spaces > 0 {
        parts.push(plural(spaces, "space"));
    }
    parts.extend(others);
    parts.join(" and ")
}

/// A character a reader cannot tell from another by looking.
fn unusual(c: char) -> bool {
    c == '\t' || c == ' ' || c == '\r' || names(c).is_some()
}

fn names(c: char) -> Option<&'static str> {
    Some(match c {
        '\u{00A0}' => "no-break space",
        '\u{00AD}' => "soft hyphen",
        '\u{2002}' => "en space",
        '\u{2003}' => "em space",
        '\u{2007}' => "figure space",
        '\u{2009}' => "thin space",
        '\u{200A}' => "hair space",
        '\u{200B}' => "zero width space",
        '\u{200C}' => "zero width non-joiner",
        '\u{200D}' => "zero width joiner",
        '\u{2060}' => "word joiner",
        '\u{202F}' => "narrow no-break space",
        '\u{3000}' => "ideographic space",
        '\u{FEFF}' => "zero width no-break space",
        '\u{2010}' => "hyphen",
        '\u{2011}' => "non-breaking hyphen",
        '\u{2012}' => "figure dash",
        '\u{2013}' => "en dash",
        '\u{2014}' => "em dash",
        '\u{2212}' => "minus sign",
        '\u{2018}' => "left single quotation mark",
        '\u{2019}' => "right single quotation mark",
        '\u{201C}' => "left double quotation mark",
        '\u{201D}' => "right double quotation mark",
        '\u{2026}' => "horizontal ellipsis",
        _ => return None,
    })
}

/// `a tab`, `U+00A0 no-break space`, `U+2013 en dash (–)`, `` `x` ``.
fn name(c: char) -> String {
    match c {
        '\t' => "a tab".into(),
        ' ' => "a space".into(),
        '\r' => "a carriage return".into(),
        _ => match names(c) {
            Some(n)
                if c.is_whitespace()
                    || c.is_control()
                    || matches!(
                        c,
                        '\u{00AD}' | '\u{200B}'..='\u{200D}' | '\u{2060}' | '\u{FEFF}'
                    ) =>
            {
                format!("U+{:04X} {n}", u32::from(c))
            }
            Some(n) => format!("U+{:04X} {n} ({c})", u32::from(c)),
            None => format!("`{c}`"),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn the_difference_is_shown_and_named() {
        let text = Text::new("one\ntwo\nlet total = compute(a, b);\nthree\nfour\nfive\nsix\n");
        assert_eq!(
            not_found(&Locator::new(&text), "let total = compute(a, c);", "a.rs"),
            "old_text does not match a.rs; the closest lines are:\n1: one\n2: two\n3: let total = compute(a, b);\n4: three\n5: four\nLine 3 differs from line 1 of old_text at the caret:\n  file:     let total = compute(a, b);\n                                   ^\n  old_text: let total = compute(a, c);\nCopy old_text exactly from the file."
        );
        let text = Text::new("- [ ] in\u{a0}current\n");
        assert!(
            not_found(&Locator::new(&text), "- [ ] in current", "t.md")
                .contains("At the caret the file has U+00A0 no-break space, old_text has a space.")
        );
        let text = Text::new("x\n\t\treturn 1\n");
        assert!(
            not_found(&Locator::new(&text), "        return 1", "a.go")
                .contains("The file indents this line with 2 tabs, old_text with 8 spaces.\n")
        );
        assert_eq!(
            not_found(&Locator::new(&Text::new("abc\n")), "zzz", "a"),
            "old_text does not match a, and no line of the file looks like it; read the file and copy old_text exactly"
        );
    }

    #[test]
    fn a_block_alike_only_in_its_first_line_is_not_offered() {
        let text =
            Text::new("def load(path):\n    with open(path) as f:\n        return json.load(f)\n");
        let old = "def load(path, strict):\n    data = fetch(url)\n    cache[url] = data\n    return data";
        assert!(
            not_found(&Locator::new(&text), old, "a.py")
                .contains("no line of the file looks like it")
        );
    }
}
