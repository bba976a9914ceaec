//! The one decoder of text files, shared by `read_file` and `edit_file` (docs/tools.md): UTF-8
//! (with or without a byte-order mark), UTF-16 with a byte-order mark, and the legacy 8-bit text
//! that is not UTF-8 (Latin-1, and the Windows-1252 it is mistaken for). Every decoding here is
//! reversible: [`encode`] gives back the very bytes [`decode`] read, so an edit changes only what
//! it replaces.

/// How a file's text is stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Encoding {
    Utf8,
    /// UTF-8 after the byte-order mark EF BB BF (kept on writing).
    Utf8Bom,
    /// UTF-16 little-endian after the mark FF FE.
    Utf16Le,
    /// UTF-16 big-endian after the mark FE FF.
    Utf16Be,
    /// 8-bit text with no byte in 0x80-0x9F: ISO-8859-1.
    Latin1,
    /// 8-bit text with bytes in 0x80-0x9F, read as Windows-1252 (curly quotes, €, …).
    Windows1252,
}

impl Encoding {
    /// The name shown to the model; `None` for plain UTF-8, which needs no word.
    pub fn label(self) -> Option<&'static str> {
        match self {
            Encoding::Utf8 | Encoding::Utf8Bom => None,
            Encoding::Utf16Le => Some("UTF-16LE"),
            Encoding::Utf16Be => Some("UTF-16BE"),
            Encoding::Latin1 => Some("Latin-1"),
            Encoding::Windows1252 => Some("Windows-1252"),
        }
    }
}

/// A file's text and how it was stored.
#[derive(Debug, PartialEq)]
pub struct Decoded {
    pub text: String,
    pub encoding: Encoding,
}

/// How much of a file is looked at for a NUL byte.
const SNIFF: usize = 8 * 1024;

/// Windows-1252's characters for 0x80-0x9F. The five bytes it leaves undefined (0x81, 0x8D, 0x8F,
/// 0x90, 0x9D) read as the C1 controls of Latin-1, so that they are written back unchanged.
const CP1252_HIGH: [char; 32] = [
    '\u{20AC}', '\u{0081}', '\u{201A}', '\u{0192}', '\u{201E}', '\u{2026}', '\u{2020}', '\u{2021}',
    '\u{02C6}', '\u{2030}', '\u{0160}', '\u{2039}', '\u{0152}', '\u{008D}', '\u{017D}', '\u{008F}',
    '\u{0090}', '\u{2018}', '\u{2019}', '\u{201C}', '\u{201D}', '\u{2022}', '\u{2013}', '\u{2014}',
    '\u{02DC}', '\u{2122}', '\u{0161}', '\u{203A}', '\u{0153}', '\u{009D}', '\u{017E}', '\u{0178}',
];

/// The text of a file, or its bytes back when it is binary: a NUL byte in its first 8 KiB (but
/// for UTF-16, which has them), a UTF-16 body that does not decode, or 8-bit bytes with control
/// characters no text has. UTF-8 is taken over without a copy (a file may be large).
pub fn decode(bytes: Vec<u8>) -> Result<Decoded, Vec<u8>> {
    let utf16 = |rest: &[u8], unit: fn([u8; 2]) -> u16, encoding| {
        utf16(rest, unit).map(|text| Decoded { text, encoding })
    };
    if let Some(rest) = bytes.strip_prefix(&[0xFF, 0xFE]) {
        return utf16(rest, u16::from_le_bytes, Encoding::Utf16Le).ok_or(bytes);
    }
    if let Some(rest) = bytes.strip_prefix(&[0xFE, 0xFF]) {
        return utf16(rest, u16::from_be_bytes, Encoding::Utf16Be).ok_or(bytes);
    }
    if bytes[..bytes.len().min(SNIFF)].contains(&0) {
        return Err(bytes);
    }
    let bom = bytes.starts_with(&[0xEF, 0xBB, 0xBF]);
    let body = if bom { &bytes[3..] } else { &bytes[..] };
    if std::str::from_utf8(body).is_ok() {
        let mut bytes = bytes;
        if bom {
            bytes.drain(..3);
        }
        let encoding = if bom {
            Encoding::Utf8Bom
        } else {
            Encoding::Utf8
        };
        return String::from_utf8(bytes)
            .map(|text| Decoded { text, encoding })
            .map_err(|e| e.into_bytes());
    }
    if bytes
        .iter()
        .any(|&b| b < 0x20 && !TEXT_CONTROLS.contains(&b))
    {
        return Err(bytes);
    }
    let encoding = if bytes.iter().any(|b| (0x80..0xA0).contains(b)) {
        Encoding::Windows1252
    } else {
        Encoding::Latin1
    };
    let text = bytes.iter().map(|&b| byte_char(b)).collect();
    Ok(Decoded { text, encoding })
}

/// Control bytes that plain text has: tab, line feed, form feed, carriage return, ^Z (the end of
/// old DOS files) and escape (colours in logs).
const TEXT_CONTROLS: [u8; 6] = [b'\t', b'\n', 0x0C, b'\r', 0x1A, 0x1B];

fn byte_char(b: u8) -> char {
    match b {
        0x80..=0x9F => CP1252_HIGH[usize::from(b - 0x80)],
        _ => char::from(b),
    }
}

fn utf16(body: &[u8], unit: fn([u8; 2]) -> u16) -> Option<String> {
    if !body.len().is_multiple_of(2) {
        return None;
    }
    let units = body.chunks_exact(2).map(|c| unit([c[0], c[1]]));
    char::decode_utf16(units)
        .collect::<Result<String, _>>()
        .ok()
}

/// The bytes of `text` in `encoding`; `Err` names the first character it cannot hold.
pub fn encode(text: &str, encoding: Encoding) -> Result<Vec<u8>, char> {
    match encoding {
        Encoding::Utf8 => Ok(text.as_bytes().to_vec()),
        Encoding::Utf8Bom => {
            let mut out = vec![0xEF, 0xBB, 0xBF];
            out.extend_from_slice(text.as_bytes());
            Ok(out)
        }
        Encoding::Utf16Le => Ok(utf16_bytes(text, [0xFF, 0xFE], u16::to_le_bytes)),
        Encoding::Utf16Be => Ok(utf16_bytes(text, [0xFE, 0xFF], u16::to_be_bytes)),
        Encoding::Latin1 | Encoding::Windows1252 => text.chars().map(char_byte).collect(),
    }
}

fn utf16_bytes(text: &str, bom: [u8; 2], bytes: fn(u16) -> [u8; 2]) -> Vec<u8> {
    let mut out = bom.to_vec();
    for unit in text.encode_utf16() {
        out.extend_from_slice(&bytes(unit));
    }
    out
}

fn char_byte(c: char) -> Result<u8, char> {
    if let Some(i) = CP1252_HIGH.iter().position(|&h| h == c) {
        return u8::try_from(0x80 + i).map_err(|_| c);
    }
    match u32::from(c) {
        n @ (0..=0x7F | 0xA0..=0xFF) => u8::try_from(n).map_err(|_| c),
        _ => Err(c),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode(bytes: &[u8]) -> Option<Decoded> {
        super::decode(bytes.to_vec()).ok()
    }

    fn round_trip(bytes: &[u8]) -> Encoding {
        let d = decode(bytes).unwrap();
        assert_eq!(encode(&d.text, d.encoding).unwrap(), bytes);
        d.encoding
    }

    #[test]
    fn every_decoding_writes_back_the_same_bytes() {
        assert_eq!(round_trip(b"plain\n"), Encoding::Utf8);
        assert_eq!(
            round_trip(b"\xEF\xBB\xBFusing System;\n"),
            Encoding::Utf8Bom
        );
        assert_eq!(round_trip(b"caf\xE9 na\xEFve\n"), Encoding::Latin1);
        assert_eq!(round_trip(b"\x93hi\x94 \x80 5\n"), Encoding::Windows1252);
        // The five bytes Windows-1252 leaves undefined.
        assert_eq!(
            round_trip(b"\x81\x8D\x8F\x90\x9D\xE9"),
            Encoding::Windows1252
        );
        assert_eq!(round_trip(b"\xFF\xFEa\x00\xE9\x00"), Encoding::Utf16Le);
        assert_eq!(round_trip(b"\xFE\xFF\x00a\x00\xE9"), Encoding::Utf16Be);
        let all: Vec<u8> = (0x20..=0xFF).collect();
        assert_eq!(round_trip(&all), Encoding::Windows1252);
    }

    #[test]
    fn legacy_text_reads_as_what_it_says() {
        let d = decode(b"say \x93hi\x94 for \x80 5, caf\xE9").unwrap();
        assert_eq!(d.text, "say \u{201C}hi\u{201D} for \u{20AC} 5, caf\u{E9}");
        assert_eq!(d.encoding.label(), Some("Windows-1252"));
        assert_eq!(decode(b"\xEF\xBB\xBFx").unwrap().text, "x");
    }

    #[test]
    fn binary_stays_binary() {
        assert_eq!(decode(b"\x7FELF\x02\x01\x01\x00\x00"), None);
        assert_eq!(decode(b"PK\x03\x04\x14\x00"), None);
        assert_eq!(decode(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"), None);
        // No NUL, but a control byte no text has.
        assert_eq!(decode(b"\xE9\x02\xFF"), None);
        // UTF-16 with an odd length or a lone surrogate.
        assert_eq!(decode(b"\xFF\xFEa"), None);
        assert_eq!(decode(b"\xFF\xFE\x00\xD8"), None);
    }

    #[test]
    fn what_an_encoding_cannot_hold_is_named() {
        assert_eq!(
            encode("caf\u{E9} \u{4E2D}", Encoding::Latin1),
            Err('\u{4E2D}')
        );
        assert_eq!(encode("\u{20AC}", Encoding::Latin1), Ok(vec![0x80]));
    }
}
