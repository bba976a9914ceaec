//! Applying a loose match: `old_text` was found line for line under some key (its indentation,
//! its look-alike characters or its spacing differ from the file's), so `new_text` cannot be
//! pasted as it is. The change `old_text` → `new_text` is diffed line by line and replayed on the
//! file's own lines: a line `new_text` repeats keeps the file's characters (tabs, curly quotes,
//! no-break spaces, its spacing), a changed line keeps what the file had around the change, and a
//! new line is indented like its neighbour in the file, in the file's unit (tabs stay tabs).

use super::keys::{Norm, fold, is_blank, key_eq};
use super::text::Text;

/// Where `old_text`'s lines are in the file.
pub struct LineMatch {
    /// For each line of `old_text`, the file line it matched (`None`: a blank line of
    /// `old_text` that a match ignoring blank lines skipped).
    pub map: Vec<Option<usize>>,
    /// The first and last file lines of the match.
    pub first: usize,
    pub last: usize,
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Op {
    /// The line is the same in `old_text` and `new_text`.
    Keep(usize, usize),
    /// A changed line: `old_text`'s line and its replacement.
    Pair(usize, usize),
    Del(usize),
    Ins(usize),
}

/// The most cells the line diff may fill; past it the change is taken as one block.
const DIFF_CELLS: usize = 4_000_000;

/// Columns a tab counts for when the model's and the file's indentation are compared.
const TAB_COLS: i64 = 4;

/// The lines that replace the file's lines `m.first..=m.last`.
pub fn merge(text: &Text, m: &LineMatch, old: &[&str], new: &[&str], norm: Norm) -> Vec<String> {
    if norm == Norm::Exact {
        // The lines are the file's to the character: `new_text` is in the file's own frame.
        return new.iter().map(|l| l.to_string()).collect();
    }
    let ops = diff(old, new, norm);
    let frame = Frame::new(text, m, old, new, &ops);
    let hunk_of = hunks(&ops, old.len());
    let gaps = gaps(m, old, &ops, &hunk_of);

    let mut out: Vec<String> = Vec::new();
    let mut anchor: Option<(String, i64)> = None;
    let mut pending: Vec<(usize, i64, &str)> = Vec::new();
    let mut next_gap = 0;
    for op in ops {
        if let Op::Keep(o, _) | Op::Pair(o, _) | Op::Del(o) = op {
            while let Some((before, lines)) = gaps.get(next_gap)
                && *before <= o
            {
                out.extend(lines.iter().map(|&f| text.line(f).to_string()));
                next_gap += 1;
            }
        }
        let placed = match op {
            Op::Keep(o, n) => m.map[o].map(|f| {
                let line = text.line(f);
                let shift = cols(new[n]) - cols(old[o]) - frame.shift;
                if shift == 0 || is_blank(line) {
                    (line.to_string(), indent(line).to_string(), n)
                } else {
                    let ind = frame.reindent(indent(line), shift);
                    (format!("{ind}{}", line.trim_start()), ind, n)
                }
            }),
            Op::Pair(o, n) => m.map[o].map(|f| {
                let line = text.line(f);
                let ind = frame.reindent(indent(line), cols(new[n]) - cols(old[o]) - frame.shift);
                let body = changed(line, old[o], new[n], norm);
                (format!("{ind}{body}"), ind, n)
            }),
            Op::Ins(n) if is_blank(new[n]) => {
                out.push(String::new());
                None
            }
            Op::Ins(n) => {
                match &anchor {
                    Some((ind, at)) => {
                        let ind = frame.reindent(ind, cols(new[n]) - at);
                        out.push(format!("{ind}{}", new[n].trim_start()));
                    }
                    None => {
                        pending.push((out.len(), cols(new[n]), new[n]));
                        out.push(String::new());
                    }
                }
                None
            }
            Op::Del(_) => None,
        };
        if let Some((line, ind, n)) = placed {
            out.push(line);
            let here = (ind, cols(new[n]));
            // New lines met before any kept line are indented from the first one after them.
            for (at, c, line) in pending.drain(..) {
                let ind = frame.reindent(&here.0, c - here.1);
                out[at] = format!("{ind}{}", line.trim_start());
            }
            anchor = Some(here);
        }
    }
    for (_, lines) in &gaps[next_gap..] {
        out.extend(lines.iter().map(|&f| text.line(f).to_string()));
    }
    for (at, c, line) in pending {
        let ind = frame.reindent(&frame.base_file, c - frame.base_new);
        out[at] = format!("{ind}{}", line.trim_start());
    }
    out
}

/// A changed line's text after its indentation: when the file's line is `old_text`'s line with
/// look-alike characters, only the part the model changed is taken from `new_text`, so the
/// characters around it stay the file's.
fn changed(file: &str, old: &str, new: &str, norm: Norm) -> String {
    let (f, o, n) = (file.trim_start(), old.trim_start(), new.trim_start());
    if norm == Norm::NoSpace || f == o {
        return n.to_string();
    }
    let fc: Vec<char> = f.chars().collect();
    let oc: Vec<char> = o.chars().collect();
    let nc: Vec<char> = n.chars().collect();
    if fc.len() != oc.len() || !fc.iter().zip(&oc).all(|(a, b)| fold(*a) == fold(*b)) {
        return n.to_string();
    }
    let prefix = oc.iter().zip(&nc).take_while(|(a, b)| a == b).count();
    let room = oc.len().min(nc.len()) - prefix;
    let suffix = oc
        .iter()
        .rev()
        .zip(nc.iter().rev())
        .take(room)
        .take_while(|(a, b)| a == b)
        .count();
    let mut out: String = fc[..prefix].iter().collect();
    out.extend(&nc[prefix..nc.len() - suffix]);
    out.extend(&fc[fc.len() - suffix..]);
    out
}

/// The line diff of `old_text` → `new_text` (longest common subsequence under `norm`), each run
/// of changes with its non-blank removed and added lines paired in order.
fn diff(old: &[&str], new: &[&str], norm: Norm) -> Vec<Op> {
    let (k, n) = (old.len(), new.len());
    let mut raw = Vec::new();
    if k.saturating_mul(n) <= DIFF_CELLS {
        // lcs[i][j]: the longest common subsequence of old[i..] and new[j..].
        let mut lcs = vec![0u32; (k + 1) * (n + 1)];
        let at = |i: usize, j: usize| i * (n + 1) + j;
        for i in (0..k).rev() {
            for j in (0..n).rev() {
                lcs[at(i, j)] = if key_eq(old[i], new[j], norm) {
                    lcs[at(i + 1, j + 1)] + 1
                } else {
                    lcs[at(i + 1, j)].max(lcs[at(i, j + 1)])
                };
            }
        }
        let (mut i, mut j) = (0, 0);
        while i < k && j < n {
            if key_eq(old[i], new[j], norm) && lcs[at(i, j)] == lcs[at(i + 1, j + 1)] + 1 {
                raw.push(Op::Keep(i, j));
                i += 1;
                j += 1;
            } else if lcs[at(i + 1, j)] >= lcs[at(i, j + 1)] {
                raw.push(Op::Del(i));
                i += 1;
            } else {
                raw.push(Op::Ins(j));
                j += 1;
            }
        }
        raw.extend((i..k).map(Op::Del));
        raw.extend((j..n).map(Op::Ins));
    } else {
        raw.extend((0..k).map(Op::Del));
        raw.extend((0..n).map(Op::Ins));
    }
    let mut ops = Vec::with_capacity(raw.len());
    let mut run: Vec<Op> = Vec::new();
    for op in raw {
        if let Op::Keep(..) = op {
            pair(&mut run, &mut ops, old, new);
            ops.push(op);
        } else {
            run.push(op);
        }
    }
    pair(&mut run, &mut ops, old, new);
    ops
}

/// Pairs a run of removed and added lines (non-blank with non-blank, in order); the removed
/// lines left over go first, then the added lines in their order.
fn pair(run: &mut Vec<Op>, ops: &mut Vec<Op>, old: &[&str], new: &[&str]) {
    let dels: Vec<usize> = run
        .iter()
        .filter_map(|op| if let Op::Del(o) = op { Some(*o) } else { None })
        .collect();
    let ins: Vec<usize> = run
        .iter()
        .filter_map(|op| if let Op::Ins(n) = op { Some(*n) } else { None })
        .collect();
    run.clear();
    let mut olds = dels.iter().copied().filter(|&o| !is_blank(old[o]));
    let mut partner = vec![None; ins.len()];
    let mut paired = Vec::new();
    for (slot, &n) in partner.iter_mut().zip(&ins) {
        if is_blank(new[n]) {
            continue;
        }
        if let Some(o) = olds.next() {
            *slot = Some(o);
            paired.push(o);
        }
    }
    ops.extend(
        dels.iter()
            .filter(|o| !paired.contains(o))
            .map(|&o| Op::Del(o)),
    );
    for (&n, slot) in ins.iter().zip(partner) {
        ops.push(match slot {
            Some(o) => Op::Pair(o, n),
            None => Op::Ins(n),
        });
    }
}

/// For each line of `old_text`, the run of changes it is in (`None` when it is kept).
fn hunks(ops: &[Op], old_len: usize) -> Vec<Option<usize>> {
    let mut of = vec![None; old_len];
    let mut hunk = 0;
    let mut in_run = false;
    for op in ops {
        match op {
            Op::Keep(..) => {
                if in_run {
                    hunk += 1;
                }
                in_run = false;
            }
            Op::Pair(o, _) | Op::Del(o) => {
                of[*o] = Some(hunk);
                in_run = true;
            }
            Op::Ins(_) => in_run = true,
        }
    }
    of
}

/// File lines between two matched lines of `old_text` that `old_text` did not have (blank lines
/// a match ignoring blank lines skipped), with the line of `old_text` they come before. They stay
/// unless the change removes them: the blank lines `old_text` had there are gone from
/// `new_text`, or both neighbours are in the same run of changes.
fn gaps(
    m: &LineMatch,
    old: &[&str],
    ops: &[Op],
    hunk_of: &[Option<usize>],
) -> Vec<(usize, Vec<usize>)> {
    let kept: Vec<bool> = {
        let mut k = vec![false; old.len()];
        for op in ops {
            if let Op::Keep(o, _) = op {
                k[*o] = true;
            }
        }
        k
    };
    let mapped: Vec<(usize, usize)> = m
        .map
        .iter()
        .enumerate()
        .filter_map(|(o, f)| f.map(|f| (o, f)))
        .collect();
    let mut out = Vec::new();
    for w in mapped.windows(2) {
        let ((a, fa), (b, fb)) = (w[0], w[1]);
        if fb <= fa + 1 {
            continue;
        }
        let between: Vec<usize> = (a + 1..b).collect();
        let keep = if between.is_empty() {
            hunk_of[a].is_none() || hunk_of[a] != hunk_of[b]
        } else {
            between.iter().any(|&o| kept[o])
        };
        if keep {
            out.push((b, (fa + 1..fb).collect()));
        }
    }
    out
}

fn indent(line: &str) -> &str {
    &line[..line.len() - line.trim_start().len()]
}

/// Width of a line's indentation in columns, a tab counting [`TAB_COLS`].
fn cols(line: &str) -> i64 {
    indent(line)
        .chars()
        .map(|c| if c == '\t' { TAB_COLS } else { 1 })
        .sum()
}

/// The file's unit of indentation.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Unit {
    Tab,
    Spaces(i64),
}

/// How the model's indentation maps onto the file's.
struct Frame {
    /// Columns `new_text` is shifted by as a whole against `old_text` (when it already has the
    /// file's indentation and `old_text` has not, or the reverse).
    shift: i64,
    /// The model's unit, in columns.
    model_unit: i64,
    file_unit: Unit,
    /// The indentation of the least indented matched line, and `new_text`'s least indentation.
    base_file: String,
    base_new: i64,
}

impl Frame {
    fn new(text: &Text, m: &LineMatch, old: &[&str], new: &[&str], ops: &[Op]) -> Frame {
        let least = |lines: &[&str]| {
            lines
                .iter()
                .filter(|l| !is_blank(l))
                .min_by_key(|l| cols(l))
                .map(|l| indent(l).to_string())
        };
        let base_old_s = least(old).unwrap_or_default();
        let base_new_s = least(new).unwrap_or_default();
        let matched: Vec<&str> = m.map.iter().flatten().map(|&f| text.line(f)).collect();
        let base_file = least(&matched).unwrap_or_default();
        let (base_old, base_new) = (cols(&base_old_s), cols(&base_new_s));
        let by_base = ops.iter().any(|op| match *op {
            Op::Keep(o, n) | Op::Pair(o, n) => {
                cols(new[n]) == base_new && cols(old[o]) == base_old && !is_blank(new[n])
            }
            Op::Del(_) | Op::Ins(_) => false,
        });
        let shift = if (base_new_s == base_file && base_old_s != base_file) || by_base {
            base_new - base_old
        } else {
            0
        };
        let file_unit = file_unit(text, &matched);
        let model_tabs = old.iter().chain(new).any(|l| indent(l).contains('\t'));
        let model_unit = if model_tabs {
            TAB_COLS
        } else {
            step(
                old.iter()
                    .chain(new)
                    .filter(|l| !is_blank(l))
                    .map(|l| cols(l)),
            )
            .unwrap_or(match file_unit {
                Unit::Tab => TAB_COLS,
                Unit::Spaces(s) => s,
            })
        };
        Frame {
            shift,
            model_unit,
            file_unit,
            base_file,
            base_new,
        }
    }

    /// `base` moved by `by` of the model's columns, in the file's unit.
    fn reindent(&self, base: &str, by: i64) -> String {
        if by == 0 {
            return base.to_string();
        }
        let levels = by / self.model_unit;
        let rest = by % self.model_unit;
        let mut tabs = base.chars().filter(|&c| c == '\t').count() as i64;
        let mut spaces = base.chars().filter(|&c| c != '\t').count() as i64;
        match self.file_unit {
            Unit::Tab => {
                tabs += levels;
                spaces += rest;
            }
            Unit::Spaces(width) => {
                spaces += levels * width + rest;
                while spaces < 0 && tabs > 0 {
                    tabs -= 1;
                    spaces += width;
                }
            }
        }
        let (tabs, spaces) = (tabs.max(0) as usize, spaces.max(0) as usize);
        format!("{}{}", "\t".repeat(tabs), " ".repeat(spaces))
    }
}

/// The smallest step of at least two columns between the indentations seen.
fn step(widths: impl Iterator<Item = i64>) -> Option<i64> {
    let mut w: Vec<i64> = widths.collect();
    w.sort_unstable();
    w.dedup();
    w.windows(2).map(|p| p[1] - p[0]).filter(|&d| d >= 2).min()
}

/// The file's unit: tabs if the matched lines are indented with them, else the step of their
/// spaces; when they do not tell, what most of the file does.
fn file_unit(text: &Text, matched: &[&str]) -> Unit {
    let lines = matched.iter().filter(|l| !is_blank(l));
    if lines.clone().any(|l| indent(l).starts_with('\t')) {
        return Unit::Tab;
    }
    if let Some(s) = step(lines.map(|l| cols(l))) {
        return Unit::Spaces(s);
    }
    let (mut tabbed, mut spaced) = (0usize, 0usize);
    let mut steps = std::collections::HashMap::<i64, usize>::new();
    let mut previous = 0;
    for i in 0..text.line_count() {
        let line = text.line(i);
        if is_blank(line) {
            continue;
        }
        match line.as_bytes()[0] {
            b'\t' => tabbed += 1,
            b' ' => spaced += 1,
            _ => {}
        }
        let c = cols(line);
        if c - previous >= 2 {
            *steps.entry(c - previous).or_default() += 1;
        }
        previous = c;
    }
    if tabbed > spaced {
        return Unit::Tab;
    }
    let common = steps.into_iter().max_by_key(|&(width, n)| (n, -width));
    Unit::Spaces(common.map_or(4, |(width, _)| width))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(file: &str, first: usize, old: &str, new: &str, norm: Norm) -> Vec<String> {
        let text = Text::new(file);
        let old: Vec<&str> = old.split('\n').collect();
        let new: Vec<&str> = new.split('\n').collect();
        let m = LineMatch {
            map: (first..first + old.len()).map(Some).collect(),
            first,
            last: first + old.len() - 1,
        };
        merge(&text, &m, &old, &new, norm)
    }

    #[test]
    fn tabs_stay_tabs_and_structure_is_kept() {
        let file = "{\n\tif (ret)\n\t\treturn ret;\n}\n";
        assert_eq!(
            run(
                file,
                1,
                "    if (ret)\n        return ret;",
                "    if (ret) {\n        log();\n        return ret;\n    }",
                Norm::Trim
            ),
            vec!["\tif (ret) {", "\t\tlog();", "\t\treturn ret;", "\t}"]
        );
    }

    #[test]
    fn new_text_with_the_files_indentation_is_not_shifted_again() {
        let file = "def f(self):\n        x = 1\n        return x\n";
        assert_eq!(
            run(
                file,
                1,
                "x = 1\nreturn x",
                "        x = 2\n        return x",
                Norm::Trim
            ),
            vec!["        x = 2", "        return x"]
        );
    }

    #[test]
    fn a_wrapped_line_moves_in() {
        let file = "fn f() {\n    b();\n}\n";
        assert_eq!(
            run(file, 1, "b();", "if x {\n    b();\n}", Norm::Trim),
            vec!["    if x {", "        b();", "    }"]
        );
    }

    #[test]
    fn a_changed_line_keeps_the_files_look_alikes() {
        assert_eq!(
            changed(
                "\u{201C}a\u{201D} at time.",
                "\"a\" at time.",
                "\"a\" at noon.",
                Norm::Fold
            ),
            "\u{201C}a\u{201D} at noon."
        );
    }
}
