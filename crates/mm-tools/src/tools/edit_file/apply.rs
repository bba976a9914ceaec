//! One edit, in memory: each reading of the call (readings.rs) through the strategies
//! (locate.rs), the first that finds something deciding; then, when nothing matched, whether
//! the edit is already there, else the closest lines (closest.rs).

use super::closest::not_found;
use super::locate::{Found, How, Located, Locator, Miss, Opts};
use super::readings::{Reading, readings};
use super::text::Text;

/// What an edit does to a file's text.
#[derive(Debug, PartialEq)]
pub enum Outcome {
    /// The new text, a phrase saying what was done (which strategy applied), and the text
    /// before.
    Edited {
        text: String,
        summary: String,
        before: String,
    },
    /// The edit is in the file already (the text for the model).
    Already(String),
    /// Refused: why, for the model.
    Refused(String),
}

pub const EMPTY_OLD: &str =
    "old_text is empty; to create a file or replace all of its content, use write_file";

/// Applies the edit to `text` (the file's decoded text, taken over: it may be large); `shown` is
/// the path as the model gave it.
pub fn apply(text: impl Into<String>, old: &str, new: &str, all: bool, shown: &str) -> Outcome {
    let text: String = text.into();
    let old = old.replace("\r\n", "\n");
    let new = new.replace("\r\n", "\n");
    if old.is_empty() {
        return if text.is_empty() {
            Outcome::Edited {
                text: new,
                summary: "wrote new_text into the empty file".into(),
                before: text,
            }
        } else {
            Outcome::Refused(EMPTY_OLD.into())
        };
    }
    let file = Text::new(text);
    let readings = match readings(&old, &new) {
        Ok(r) => r,
        Err(why) => return Outcome::Refused(why),
    };
    // One locator for every reading: the file's line keys are hashed once.
    let locator = Locator::new(&file);
    for reading in &readings {
        match run(&locator, reading, all, shown) {
            Ok(Some(outcome)) => return outcome,
            Ok(None) => {}
            Err(miss) => return Outcome::Refused(refusal(miss, shown)),
        }
    }
    for reading in &readings {
        if let [(o, n)] = reading.edits.as_slice()
            && o != n
            && let Some(line) = locator.presence(n)
        {
            return Outcome::Already(format!(
                "{shown} already has new_text at line {line}: the edit is already applied, nothing was changed"
            ));
        }
    }
    // The most specific reading says best what the model was looking for.
    let looked_for = readings
        .last()
        .and_then(|r| r.edits.first())
        .map_or(old.as_str(), |(o, _)| o.as_str());
    Outcome::Refused(not_found(&locator, looked_for, shown))
}

/// One reading, its edits applied in turn; `Ok(None)` when one of them matches nothing.
fn run(
    locator: &Locator,
    reading: &Reading,
    all: bool,
    shown: &str,
) -> Result<Option<Outcome>, Miss> {
    let opts = Opts {
        all,
        hint: reading.hint,
        whole_lines: reading.whole_lines,
        shown,
    };
    if reading.edits.is_empty() {
        return Ok(None);
    }
    let mut done = String::new();
    let mut summary = String::new();
    for (i, (old, new)) in reading.edits.iter().enumerate() {
        // After the first hunk, the next ones are looked for in the text the first made.
        let later = (i > 0).then(|| Text::new(&done));
        let fresh = later.as_ref().map(Locator::new);
        let here = fresh.as_ref().unwrap_or(locator);
        let found = match here.locate(old, new, &opts) {
            Ok(Located::Edit(found)) => found,
            Ok(Located::Already(line)) if reading.edits.len() == 1 => {
                return Ok(Some(Outcome::Already(format!(
                    "{shown} already has new_text at line {line}: the edit is already applied, nothing was changed"
                ))));
            }
            Ok(Located::Already(_)) | Err(Miss::NotFound) => return Ok(None),
            Err(miss) => return Err(miss),
        };
        if i == 0 {
            summary = describe(&found);
        }
        done = here.text().render(&found.splices);
    }
    if reading.edits.len() > 1 {
        summary = format!("applied {} hunks", reading.edits.len());
    }
    if let Some(note) = reading.note.phrase() {
        summary = format!("{summary}; {note}");
    }
    Ok(Some(Outcome::Edited {
        text: done,
        summary,
        before: locator.text().render(&[]),
    }))
}

fn describe(found: &Found) -> String {
    let lines = if found.first == found.last {
        format!("line {}", found.first + 1)
    } else {
        format!("lines {}-{}", found.first + 1, found.last + 1)
    };
    match found.how {
        How::Exact if found.count == 1 => "replaced 1 occurrence".into(),
        How::Exact => format!("replaced {} occurrences", found.count),
        How::Elision => format!("replaced {} pieces, {}", found.count, found.how.phrase()),
        How::Lines(_) | How::BlankLines if found.count > 1 => format!(
            "replaced {} places (the first at {lines}), {}",
            found.count,
            found.how.phrase()
        ),
        How::Lines(_) | How::BlankLines => format!("replaced {lines}, {}", found.how.phrase()),
    }
}

fn refusal(miss: Miss, shown: &str) -> String {
    let list = |lines: &[usize]| {
        lines
            .iter()
            .map(usize::to_string)
            .collect::<Vec<_>>()
            .join(", ")
    };
    match miss {
        Miss::Ambiguous(How::Exact, lines) => format!(
            "old_text matches {} times in {shown} (lines {}); include more surrounding lines to make it unique, or set replace_all",
            lines.len(),
            list(&lines)
        ),
        Miss::Ambiguous(How::Elision, lines) => format!(
            "a piece of old_text between `...` lines matches {} times in {shown} (lines {}); include more lines in it to make it unique",
            lines.len(),
            list(&lines)
        ),
        Miss::Ambiguous(how, lines) => format!(
            "old_text does not match {shown} exactly; {} it matches {} times (lines {}); include more surrounding lines to make it unique",
            how.loosely(),
            lines.len(),
            list(&lines)
        ),
        Miss::Cut(why) => why,
        Miss::NotFound => not_found(&Locator::new(&Text::new("")), "", shown),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Bad input never crashes: files, `old_text` and `new_text` made of pieces that trip byte
    /// offsets (multi-byte characters, CRLF, tabs, `...`, markers, prefixes), in many mixes.
    #[test]
    fn no_mix_of_awkward_pieces_panics() {
        const PIECES: [&str; 16] = [
            "\u{e9}",
            "a",
            " ",
            "\n",
            "\t",
            "->",
            "\u{2026}",
            "x",
            "\r\n",
            "...\n",
            "\u{201C}",
            "1: ",
            "- ",
            "+",
            "\\n",
            "=======\n",
        ];
        let mut seed: u64 = 0x2545_F491_4F6C_DD1D;
        let mut next = |n: usize| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % n as u64) as usize
        };
        let mut pick =
            |len: usize| -> String { (0..len).map(|_| PIECES[next(PIECES.len())]).collect() };
        for _ in 0..20_000 {
            let (f, o, n) = (pick(12), pick(3), pick(3));
            for all in [false, true] {
                let _ = apply(f.as_str(), &o, &n, all, "f");
            }
        }
        // A retried edit whose new_text starts inside a multi-byte character of the file.
        assert!(matches!(
            apply("\u{e9}b->\n", "->", "a ->", false, "f"),
            Outcome::Edited { .. }
        ));
    }
}
