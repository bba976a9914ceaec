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
    /// Folded, without whitespace — but for one space where whitespace separates two word
    /// characters, so that `// comment` is `//comment` and `a  =  b` is `a=b`, while `foo bar`
    /// stays apart from `foobar`.
    NoSpace,
}

/// A character of a word: letters, digits, `_`.
pub fn is_word(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
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
    chars: std::iter::Peekable<std::str::Chars<'a>>,
    norm: Norm,
    /// `NoSpace`: the last character given was a word character.
    after_word: bool,
}

impl Iterator for KeyChars<'_> {
    type Item = char;
    fn next(&mut self) -> Option<char> {
        let c = self.chars.next()?;
        match self.norm {
            Norm::Exact | Norm::Trim => Some(c),
            Norm::Fold => Some(fold(c)),
            Norm::NoSpace => {
                if !c.is_whitespace() {
                    self.after_word = is_word(c);
                    return Some(fold(c));
                }
                while self.chars.next_if(|c| c.is_whitespace()).is_some() {}
                let next = *self.chars.peek()?;
                if self.after_word && is_word(next) {
                    self.after_word = false;
                    Some(' ')
                } else {
                    self.next()
                }
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
        chars: s.chars().peekable(),
        norm,
        after_word: false,
    }
}

pub fn key_eq(a: &str, b: &str, norm: Norm) -> bool {
    key_chars(a, norm).eq(key_chars(b, norm))
}

/// A hash of a line's key under `norm`: the same for lines whose keys are equal.
pub fn key_hash(line: &str, norm: Norm) -> u64 {
    if norm == Norm::Exact {
        return hash_bytes(line.as_bytes());
    }
    let key: String = key_chars(line, norm).collect();
    hash_bytes(key.as_bytes())
}

/// The hash of an empty key (a blank line's, without whitespace).
pub fn empty_hash() -> u64 {
    hash_bytes(b"")
}

/// A fast hash of bytes, eight at a time.
fn hash_bytes(bytes: &[u8]) -> u64 {
    const K: u64 = 0x517c_c1b7_2722_0a95;
    let mut h = bytes.len() as u64;
    let mut chunks = bytes.chunks_exact(8);
    for c in &mut chunks {
        let w = u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]);
        h = (h.rotate_left(5) ^ w).wrapping_mul(K);
    }
    let mut tail = 0u64;
    for (i, b) in chunks.remainder().iter().enumerate() {
        tail |= u64::from(*b) << (8 * i);
    }
    (h.rotate_left(5) ^ tail).wrapping_mul(K)
}

/// Whitespace as `char::is_whitespace` has it, for ASCII bytes.
fn ascii_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | 0x0B | 0x0C | b'\r')
}

/// The hashes of every line's key under `Trim`, `Fold` and `NoSpace`, in one pass over the
/// file: most lines are ASCII, where a key is a slice of the line's bytes (folding changes
/// nothing there), so no string is built for them.
pub struct LineKeys {
    pub trim: Vec<u64>,
    pub fold: Vec<u64>,
    pub no_space: Vec<u64>,
}

impl LineKeys {
    pub fn new<'a>(lines: impl ExactSizeIterator<Item = &'a str>) -> LineKeys {
        let n = lines.len();
        let mut keys = LineKeys {
            trim: Vec::with_capacity(n),
            fold: Vec::with_capacity(n),
            no_space: Vec::with_capacity(n),
        };
        let mut squeezed = Vec::new();
        for line in lines {
            if line.is_ascii() {
                let bytes = line.as_bytes();
                let from = bytes
                    .iter()
                    .position(|&b| !ascii_space(b))
                    .unwrap_or(bytes.len());
                let to = bytes
                    .iter()
                    .rposition(|&b| !ascii_space(b))
                    .map_or(from, |i| i + 1);
                let trimmed = &bytes[from..to];
                let h = hash_bytes(trimmed);
                keys.trim.push(h);
                keys.fold.push(h);
                squeezed.clear();
                let mut gap = false;
                for &b in trimmed {
                    if ascii_space(b) {
                        gap = true;
                        continue;
                    }
                    let word = b.is_ascii_alphanumeric() || b == b'_';
                    if gap
                        && word
                        && squeezed
                            .last()
                            .is_some_and(|&p: &u8| p.is_ascii_alphanumeric() || p == b'_')
                    {
                        squeezed.push(b' ');
                    }
                    gap = false;
                    squeezed.push(b);
                }
                keys.no_space.push(hash_bytes(&squeezed));
            } else {
                keys.trim.push(key_hash(line, Norm::Trim));
                keys.fold.push(key_hash(line, Norm::Fold));
                keys.no_space.push(key_hash(line, Norm::NoSpace));
            }
        }
        keys
    }

    pub fn of(&self, norm: Norm) -> Option<&[u64]> {
        match norm {
            Norm::Exact => None,
            Norm::Trim => Some(&self.trim),
            Norm::Fold => Some(&self.fold),
            Norm::NoSpace => Some(&self.no_space),
        }
    }
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
        assert!(key_eq("if\t(  a\t) {", "if ( a ) {", Norm::NoSpace));
        assert!(key_eq(
            "x  =  compute(a,  b)",
            "x = compute(a, b)",
            Norm::NoSpace
        ));
        assert!(!key_eq("foo bar", "foobar", Norm::NoSpace));
        assert!(key_eq("foo   bar", "foo bar", Norm::NoSpace));
        assert!(!key_eq("//处理根路径", "// 处理根路径", Norm::Fold));
        assert_eq!(
            key_hash("  a\u{a0}b", Norm::Fold),
            key_hash("a b", Norm::Fold)
        );
        // The ASCII fast path hashes as the general one does.
        let lines = ["\t  foo( a ) ", "  x\u{201C}y\u{201D}", "", "a  b  (c)"];
        let keys = LineKeys::new(lines.iter().copied());
        for (i, l) in lines.iter().enumerate() {
            assert_eq!(keys.trim[i], key_hash(l, Norm::Trim));
            assert_eq!(keys.fold[i], key_hash(l, Norm::Fold));
            assert_eq!(keys.no_space[i], key_hash(l, Norm::NoSpace));
        }
        assert_eq!(find_all(&[1, 2, 1, 2, 1], &[1, 2, 1]), vec![0, 2]);
        assert_eq!(find_all(&[1, 1, 1], &[1, 1]), vec![0, 1]);
        assert!(find_all(&[1], &[1, 1]).is_empty());
    }
}
