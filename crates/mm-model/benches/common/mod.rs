//! What the benches share: realistic streams from a fixed generator.

/// `n` words picked from `words` by a fixed xorshift generator: a realistic stream (short
/// pieces, common words again and again) that is the same on every run and never a loop.
pub fn pick(words: &[&'static str], n: usize) -> Vec<&'static str> {
    let mut state: u64 = 0x2545_f491_4f6c_dd1d;
    (0..n)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            words[(state % words.len() as u64) as usize]
        })
        .collect()
}
