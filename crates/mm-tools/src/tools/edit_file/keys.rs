//! How two lines can count as the same for a loose match: each strategy compares lines by a key
//! (docs/tools.md lists them in order). Keys are compared and hashed character by character,
//! without building strings, since a 10 MB file has a quarter of a million lines.

/// What a line's key keeps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Norm {
    /// The whole line.
    Exact,
    /// The line without leading and trailing whitespace.
    Trim,
    /// Trimmed, with look-alike characters folded (curly quotes, dashes, odd spaces).
    Fold,
    /// Folded, without any whitespace.
    NoSpace,
}

/// A look-alike's plain character, for matching only: one character for one, so that a position
/// in a folded line is the same position in the line.
pub fn fold(c: char) -> char {
    match c {
        '\u{2010}'..='\u{2015}' | '\u{2212}' | '\u{FE63}' | '\u{FF0D}' => '-',
        '\u{2018}' | '\u{2019}' | '\u{201A}' | '\u{201B}' | '\u{2032}' | '\u{FF07}' => '\'',
        '\u{201C}'..='\u{201F}' | '\u{2033}' | '\u{FF02}' => '"',
        '\u{00A0}' | '\u{2000}'..='\u{200A}' | '\u{202F}' | '\u{205F}' | '\u{3000}' => ' ',
        other => other,
    }
}

pub struct KeyChars<'a> {
    chars: std::str::Chars<'a>,
    norm: Norm,
}

impl Iterator for KeyChars<'_> {
    type Item = char;
    fn next(&mut self) -> Option<char> {
        loop {
            let c = self.chars.next()?;
            match self.norm {
                Norm::Exact | Norm::Trim => return Some(c),
                Norm::Fold => return Some(fold(c)),
                Norm::NoSpace if c.is_whitespace() => continue,
                Norm::NoSpace => return Some(fold(c)),
            }
        }
    }
}

pub fn key_chars(line: &str, norm: Norm) -> KeyChars<'_> {
    let s = match norm {
        Norm::Exact => line,
        Norm::Trim | Norm::Fold | Norm::NoSpace => line.trim(),
    };
    KeyChars {
        chars: s.chars(),
        norm,
    }
}

pub fn key_eq(a: &str, b: &str, norm: Norm) -> bool {
    key_chars(a, norm).eq(key_chars(b, norm))
}

/// FNV-1a over the key's characters.
pub fn key_hash(line: &str, norm: Norm) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for c in key_chars(line, norm) {
        h ^= u64::from(u32::from(c));
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

pub fn is_blank(line: &str) -> bool {
    line.trim().is_empty()
}

/// Every start of `needle` in `hay` (overlapping ones too), in linear time (Knuth-Morris-Pratt).
pub fn find_all(hay: &[u64], needle: &[u64]) -> Vec<usize> {
    let mut found = Vec::new();
    if needle.is_empty() || needle.len() > hay.len() {
        return found;
    }
    let mut fail = vec![0usize; needle.len()];
    let mut k = 0;
    for i in 1..needle.len() {
        while k > 0 && needle[i] != needle[k] {
            k = fail[k - 1];
        }
        if needle[i] == needle[k] {
            k += 1;
        }
        fail[i] = k;
    }
    k = 0;
    for (i, h) in hay.iter().enumerate() {
        while k > 0 && *h != needle[k] {
            k = fail[k - 1];
        }
        if *h == needle[k] {
            k += 1;
        }
        if k == needle.len() {
            found.push(i + 1 - k);
            k = fail[k - 1];
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys() {
        assert!(key_eq("\tfoo(a)  ", "foo(a)", Norm::Trim));
        assert!(!key_eq("\tfoo(a)", "foo(a)", Norm::Exact));
        assert!(key_eq(
            "say \u{201C}hi\u{201D} \u{2013} ok",
            "say \"hi\" - ok",
            Norm::Fold
        ));
        assert!(key_eq("//处理根路径", "// 处理根路径", Norm::NoSpace));
        assert!(!key_eq("//处理根路径", "// 处理根路径", Norm::Fold));
        assert_eq!(
            key_hash("  a\u{a0}b", Norm::Fold),
            key_hash("a b", Norm::Fold)
        );
        assert_eq!(find_all(&[1, 2, 1, 2, 1], &[1, 2, 1]), vec![0, 2]);
        assert_eq!(find_all(&[1, 1, 1], &[1, 1]), vec![0, 1]);
        assert!(find_all(&[1], &[1, 1]).is_empty());
    }
}
