//! The answer's Markdown as the terminal draws it, one snapshot per construct (escape codes
//! shown as `⎋`), each also streamed character by character (it must come out the same), at
//! 120 and 60 columns where the width matters.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use mm_term::markdown::MarkdownStream;
use pretty_assertions::assert_eq;

fn render(text: &str, width: Option<usize>) -> String {
    let whole = {
        let mut md = MarkdownStream::new(true, true);
        md.set_width(width);
        let mut out = md.push(text);
        out.push_str(&md.finish());
        out
    };
    let by_char = {
        let mut md = MarkdownStream::new(true, true);
        md.set_width(width);
        let mut out = String::new();
        for c in text.chars() {
            out.push_str(&md.push(&c.to_string()));
        }
        out.push_str(&md.finish());
        out
    };
    assert_eq!(by_char, whole, "streamed by character");
    whole.replace('\x1b', "⎋")
}

/// The rendered text without its escape codes: what the eye sees.
fn seen(text: &str, width: Option<usize>) -> String {
    let shown = render(text, width);
    let mut out = String::new();
    let mut escape = false;
    for c in shown.chars() {
        match (escape, c) {
            (false, '⎋') => escape = true,
            (true, c) if c.is_ascii_alphabetic() => escape = false,
            (true, _) => {}
            (false, c) => out.push(c),
        }
    }
    out
}

const TABLE: &str = "Results:\n\n| tool | what it does | speed |\n|:-----|:------------:|------:|\n| `rg` | searches files for a pattern, fast, respecting .gitignore | 10 |\n| grep | the classic | 1 |\n\nThat is all.\n";

#[mm_testkit::test]
fn a_heading_has_no_hashes() {
    insta::assert_snapshot!(render("# Title\n\n### Smaller\ntext\n", None));
}

#[mm_testkit::test]
fn a_table_has_aligned_columns() {
    insta::assert_snapshot!(seen(TABLE, Some(120)));
    insta::assert_snapshot!("a_table_in_colour", render(TABLE, Some(120)));
}

#[mm_testkit::test]
fn a_narrow_table_wraps_inside_its_cells() {
    let shown = seen(TABLE, Some(60));
    for line in shown.lines() {
        assert!(unicode_width(line) < 60, "{line:?}");
    }
    insta::assert_snapshot!(shown);
}

#[mm_testkit::test]
fn fenced_code_has_no_fences_and_is_cut_never_wrapped() {
    let code = "Run:\n\n```python\nprint(\"a long line of python that goes on past the edge of a narrow window\")\nx = 1\n```\nDone.\n";
    insta::assert_snapshot!("code_at_120", seen(code, Some(120)));
    let at_60 = seen(code, Some(60));
    for line in at_60.lines() {
        assert!(unicode_width(line) < 60, "{line:?}");
    }
    insta::assert_snapshot!("code_at_60", at_60);
}

#[mm_testkit::test]
fn a_link_is_its_text_then_its_url() {
    insta::assert_snapshot!(render(
        "See [the docs](https://example.com/docs) and [not a link] or [x] (y), a[b.\n",
        None
    ));
}

fn unicode_width(s: &str) -> usize {
    s.chars().count()
}
