//! Keys as the terminal sends them. Pure, unit-tested. On Unix, decoded from the bytes of raw
//! mode: the reader (raw/unix.rs) feeds [`Decoder`] whatever one `read` returned, and it keeps
//! an incomplete sequence (an escape sequence or a UTF-8 character cut between two reads, a
//! paste not yet ended) for the next bytes. On Windows, the console's events as crossterm
//! decodes them, mapped by [`of_event`] (raw/windows.rs).

use crossterm::event::{Event, KeyCode, KeyEvent, KeyEventKind, KeyModifiers};

/// A key, or a paste.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Key {
    Char(char),
    /// Enter (`\r`), or Ctrl-J (`\n`).
    Enter,
    /// Alt-Enter: a new line in the prompt.
    AltEnter,
    Tab,
    Backspace,
    /// Alt-Backspace, Ctrl-W: the word before the cursor.
    DeleteWordBack,
    Delete,
    Left,
    Right,
    Up,
    Down,
    Home,
    End,
    /// Alt-B, Ctrl-Left.
    WordLeft,
    /// Alt-F, Ctrl-Right.
    WordRight,
    /// Ctrl-C.
    Interrupt,
    /// Ctrl-D.
    CtrlD,
    /// Another Ctrl-letter (`'a'` for Ctrl-A), other than C, D, H, I, J, M and W.
    Ctrl(char),
    Escape,
    /// Text pasted with bracketed paste (newlines in it do not submit).
    Paste(String),
    /// The terminal is gone (end of input, or an error reading it).
    Hangup,
    /// A sequence mm has no use for (function keys, mouse reports).
    Other,
}

/// Bytes that start a bracketed paste, and end it.
const PASTE_START: &[u8] = b"\x1b[200~";
const PASTE_END: &[u8] = b"\x1b[201~";

/// Decodes bytes into keys, holding an incomplete sequence until more bytes come.
#[derive(Debug, Default)]
pub struct Decoder {
    held: Vec<u8>,
}

/// What the bytes at the start of a buffer are.
enum Step {
    /// A key and the number of bytes it took.
    Key(Key, usize),
    /// Not enough bytes to say.
    Incomplete,
}

impl Decoder {
    pub fn new() -> Self {
        Decoder::default()
    }

    /// Whether bytes are held, waiting for the rest of a sequence.
    pub fn holds(&self) -> bool {
        !self.held.is_empty()
    }

    /// The keys of `bytes` (after what was held); an incomplete sequence at the end is held.
    pub fn feed(&mut self, bytes: &[u8]) -> Vec<Key> {
        self.held.extend_from_slice(bytes);
        self.decode(false)
    }

    /// No more bytes came in time: what is held is taken as it is (a lone ESC is Escape).
    pub fn flush(&mut self) -> Vec<Key> {
        self.decode(true)
    }

    fn decode(&mut self, complete: bool) -> Vec<Key> {
        let mut keys = Vec::new();
        let mut at = 0;
        while at < self.held.len() {
            match step(&self.held[at..], complete) {
                Step::Key(key, n) => {
                    keys.push(key);
                    at += n;
                }
                Step::Incomplete => break,
            }
        }
        self.held.drain(..at);
        keys
    }
}

/// One key at the start of `b` (not empty); with `complete`, never `Incomplete`.
fn step(b: &[u8], complete: bool) -> Step {
    let key = |k: Key, n: usize| Step::Key(k, n);
    match b[0] {
        0x1b => escape(b, complete),
        b'\r' | b'\n' => key(Key::Enter, 1),
        b'\t' => key(Key::Tab, 1),
        0x7f | 0x08 => key(Key::Backspace, 1),
        0x03 => key(Key::Interrupt, 1),
        0x04 => key(Key::CtrlD, 1),
        0x17 => key(Key::DeleteWordBack, 1),
        c @ 0x01..=0x1a => key(Key::Ctrl(char::from(b'a' + c - 1)), 1),
        0x00..=0x1f => key(Key::Other, 1),
        _ => utf8(b, complete),
    }
}

/// A UTF-8 character; an invalid or cut one is U+FFFD.
fn utf8(b: &[u8], complete: bool) -> Step {
    let len = match b[0] {
        0x00..=0x7f => 1,
        0xc0..=0xdf => 2,
        0xe0..=0xef => 3,
        0xf0..=0xf7 => 4,
        _ => return Step::Key(Key::Char(char::REPLACEMENT_CHARACTER), 1),
    };
    if b.len() < len {
        if complete {
            return Step::Key(Key::Char(char::REPLACEMENT_CHARACTER), b.len());
        }
        return Step::Incomplete;
    }
    match std::str::from_utf8(&b[..len]) {
        Ok(s) => {
            let c = s.chars().next().unwrap_or(char::REPLACEMENT_CHARACTER);
            Step::Key(Key::Char(c), len)
        }
        Err(_) => Step::Key(Key::Char(char::REPLACEMENT_CHARACTER), 1),
    }
}

/// A sequence starting with ESC.
fn escape(b: &[u8], complete: bool) -> Step {
    let Some(&second) = b.get(1) else {
        return if complete {
            Step::Key(Key::Escape, 1)
        } else {
            Step::Incomplete
        };
    };
    match second {
        b'[' => csi(b, complete),
        b'O' => match b.get(2) {
            Some(&c) => Step::Key(ss3(c), 3),
            None if complete => Step::Key(Key::Other, 2),
            None => Step::Incomplete,
        },
        b'\r' | b'\n' => Step::Key(Key::AltEnter, 2),
        0x7f | 0x08 => Step::Key(Key::DeleteWordBack, 2),
        b'b' | b'B' => Step::Key(Key::WordLeft, 2),
        b'f' | b'F' => Step::Key(Key::WordRight, 2),
        // ESC then a key no sequence starts with (ESC ESC, or Esc typed quickly before a
        // letter): Escape on its own, and the next byte is a key of its own, never lost.
        _ => Step::Key(Key::Escape, 1),
    }
}

/// `ESC O x`: keys in the terminal's application mode.
fn ss3(c: u8) -> Key {
    match c {
        b'A' => Key::Up,
        b'B' => Key::Down,
        b'C' => Key::Right,
        b'D' => Key::Left,
        b'H' => Key::Home,
        b'F' => Key::End,
        _ => Key::Other,
    }
}

/// `ESC [ params final`, and bracketed paste.
fn csi(b: &[u8], complete: bool) -> Step {
    if b.starts_with(PASTE_START) {
        let body = &b[PASTE_START.len()..];
        return match find(body, PASTE_END) {
            Some(end) => {
                let text = String::from_utf8_lossy(&body[..end]).replace("\r\n", "\n");
                let text = text.replace('\r', "\n");
                Step::Key(Key::Paste(text), PASTE_START.len() + end + PASTE_END.len())
            }
            None if complete => Step::Key(
                Key::Paste(String::from_utf8_lossy(body).replace('\r', "\n")),
                b.len(),
            ),
            None => Step::Incomplete,
        };
    }
    // Parameter and intermediate bytes, then one final byte in `@`..=`~`.
    let mut i = 2;
    while i < b.len() && (0x20..=0x3f).contains(&b[i]) {
        i += 1;
    }
    let Some(&last) = b.get(i) else {
        return if complete {
            Step::Key(Key::Other, b.len())
        } else {
            Step::Incomplete
        };
    };
    if !(0x40..=0x7e).contains(&last) {
        // Not a sequence after all: drop the ESC [ and go on.
        return Step::Key(Key::Other, i);
    }
    let params = &b[2..i];
    let key = match (params, last) {
        (b"", b'A') => Key::Up,
        (b"", b'B') => Key::Down,
        (b"", b'C') => Key::Right,
        (b"", b'D') => Key::Left,
        (b"" | b"1", b'H') => Key::Home,
        (b"" | b"1", b'F') => Key::End,
        (b"1" | b"7", b'~') => Key::Home,
        (b"4" | b"8", b'~') => Key::End,
        (b"3", b'~') => Key::Delete,
        (b"1;5" | b"1;3", b'C') => Key::WordRight,
        (b"1;5" | b"1;3", b'D') => Key::WordLeft,
        _ => Key::Other,
    };
    Step::Key(key, i + 1)
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// The key of one of crossterm's events; `None` for what is no key press (a release, a mouse or
/// focus report, a resize).
#[cfg_attr(not(windows), allow(dead_code))]
pub fn of_event(event: Event) -> Option<Key> {
    match event {
        Event::Key(key) => of_key(key),
        Event::Paste(text) => Some(Key::Paste(text.replace("\r\n", "\n").replace('\r', "\n"))),
        Event::FocusGained | Event::FocusLost | Event::Mouse(_) | Event::Resize(..) => None,
    }
}

fn of_key(key: KeyEvent) -> Option<Key> {
    if key.kind == KeyEventKind::Release {
        return None;
    }
    let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
    let alt = key.modifiers.contains(KeyModifiers::ALT);
    Some(match key.code {
        KeyCode::Char(c) if ctrl && !alt => match c.to_ascii_lowercase() {
            'c' => Key::Interrupt,
            'd' => Key::CtrlD,
            'h' => Key::Backspace,
            'i' => Key::Tab,
            'j' | 'm' => Key::Enter,
            'w' => Key::DeleteWordBack,
            l @ 'a'..='z' => Key::Ctrl(l),
            _ => Key::Other,
        },
        KeyCode::Char('b' | 'B') if alt => Key::WordLeft,
        KeyCode::Char('f' | 'F') if alt => Key::WordRight,
        KeyCode::Char(c) => Key::Char(c),
        KeyCode::Enter if alt => Key::AltEnter,
        KeyCode::Enter => Key::Enter,
        KeyCode::Tab => Key::Tab,
        KeyCode::Backspace if alt || ctrl => Key::DeleteWordBack,
        KeyCode::Backspace => Key::Backspace,
        KeyCode::Delete => Key::Delete,
        KeyCode::Left if alt || ctrl => Key::WordLeft,
        KeyCode::Right if alt || ctrl => Key::WordRight,
        KeyCode::Left => Key::Left,
        KeyCode::Right => Key::Right,
        KeyCode::Up => Key::Up,
        KeyCode::Down => Key::Down,
        KeyCode::Home => Key::Home,
        KeyCode::End => Key::End,
        KeyCode::Esc => Key::Escape,
        _ => Key::Other,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn keys(bytes: &[u8]) -> Vec<Key> {
        let mut d = Decoder::new();
        let mut k = d.feed(bytes);
        k.extend(d.flush());
        k
    }

    #[test]
    fn one_read_can_hold_several_keys() {
        assert_eq!(
            keys("3\r\x1b[Aé\x7f\x03\x04\t\n".as_bytes()),
            vec![
                Key::Char('3'),
                Key::Enter,
                Key::Up,
                Key::Char('é'),
                Key::Backspace,
                Key::Interrupt,
                Key::CtrlD,
                Key::Tab,
                Key::Enter
            ]
        );
    }

    #[test]
    fn editing_keys_in_their_several_encodings() {
        assert_eq!(
            keys(
                b"\x1b[H\x1bOF\x1b[1~\x1b[4~\x1b[3~\x1b[1;5C\x1b[1;5D\x1bb\x1bf\x1b\r\x1b\x7f\x17"
            ),
            vec![
                Key::Home,
                Key::End,
                Key::Home,
                Key::End,
                Key::Delete,
                Key::WordRight,
                Key::WordLeft,
                Key::WordLeft,
                Key::WordRight,
                Key::AltEnter,
                Key::DeleteWordBack,
                Key::DeleteWordBack
            ]
        );
        assert_eq!(
            keys(b"\x01\x05\x0b\x15\x1a\x1b[15~\x00"),
            vec![
                Key::Ctrl('a'),
                Key::Ctrl('e'),
                Key::Ctrl('k'),
                Key::Ctrl('u'),
                Key::Ctrl('z'),
                Key::Other,
                Key::Other
            ]
        );
    }

    #[test]
    fn a_sequence_cut_between_two_reads_is_held() {
        let mut d = Decoder::new();
        assert_eq!(d.feed(b"a\x1b["), vec![Key::Char('a')]);
        assert!(d.holds());
        assert_eq!(d.feed(b"D"), vec![Key::Left]);
        assert_eq!(d.feed(&"é".as_bytes()[..1]), vec![]);
        assert_eq!(d.feed(&"é".as_bytes()[1..]), vec![Key::Char('é')]);
        // A lone ESC is Escape once no more bytes come.
        assert_eq!(d.feed(b"\x1b"), vec![]);
        assert_eq!(d.flush(), vec![Key::Escape]);
        assert!(!d.holds());
    }

    #[test]
    fn a_paste_is_one_key_whatever_the_reads() {
        let mut d = Decoder::new();
        assert_eq!(d.feed(b"\x1b[200~line one\r"), vec![]);
        assert_eq!(
            d.feed(b"line two\x1b[201~x"),
            vec![Key::Paste("line one\nline two".into()), Key::Char('x')]
        );
    }

    #[test]
    fn the_console_s_key_events_are_the_same_keys() {
        use crossterm::event::KeyEventState;
        let press = |code, modifiers| {
            Event::Key(KeyEvent {
                code,
                modifiers,
                kind: KeyEventKind::Press,
                state: KeyEventState::NONE,
            })
        };
        let none = KeyModifiers::NONE;
        let ctrl = KeyModifiers::CONTROL;
        let alt = KeyModifiers::ALT;
        let got: Vec<Option<Key>> = vec![
            press(KeyCode::Char('é'), none),
            press(KeyCode::Char('c'), ctrl),
            press(KeyCode::Char('d'), ctrl),
            press(KeyCode::Char('w'), ctrl),
            press(KeyCode::Char('r'), ctrl),
            press(KeyCode::Char('b'), alt),
            press(KeyCode::Enter, alt),
            press(KeyCode::Enter, none),
            press(KeyCode::Left, ctrl),
            press(KeyCode::Backspace, alt),
            press(KeyCode::Esc, none),
            press(KeyCode::F(5), none),
            Event::Paste("a\r\nb".into()),
            Event::Resize(80, 24),
            Event::Key(KeyEvent {
                code: KeyCode::Char('x'),
                modifiers: none,
                kind: KeyEventKind::Release,
                state: KeyEventState::NONE,
            }),
        ]
        .into_iter()
        .map(of_event)
        .collect();
        assert_eq!(
            got,
            vec![
                Some(Key::Char('é')),
                Some(Key::Interrupt),
                Some(Key::CtrlD),
                Some(Key::DeleteWordBack),
                Some(Key::Ctrl('r')),
                Some(Key::WordLeft),
                Some(Key::AltEnter),
                Some(Key::Enter),
                Some(Key::WordLeft),
                Some(Key::DeleteWordBack),
                Some(Key::Escape),
                Some(Key::Other),
                Some(Key::Paste("a\nb".into())),
                None,
                None,
            ]
        );
    }
}
