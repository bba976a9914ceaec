//! HTML to readable Markdown-like text, streaming: `lol_html` parses the page chunk by chunk as
//! it downloads and its handlers write text into a [`Capture`] that keeps only the head and the
//! tail a tool result can show, so memory stays bounded whatever the size of the page (a DOM
//! would hold the whole page several times over).
//!
//! Scripts, styles, navigation, page headers and footers, forms and embedded media are dropped;
//! headings become `#` lines, list items `- ` lines, links `[text](url)`, `pre` blocks fenced
//! code; whitespace is collapsed as a browser would.

use std::borrow::Cow;
use std::cell::RefCell;
use std::rc::Rc;

use lol_html::html_content::{Element, EndTag, TextChunk};
use lol_html::{
    AsciiCompatibleEncoding, DocumentContentHandlers, ElementContentHandlers, HandlerResult,
    HtmlRewriter, Selector, Settings,
};

/// Elements whose content is not text for a reader.
const DROPPED: &[&str] = &[
    "script", "style", "noscript", "template", "svg", "math", "nav", "header", "footer", "aside",
    "form", "iframe", "object", "canvas", "button", "select", "textarea", "video", "audio", "map",
    "dialog",
];
/// Elements that start and end a block of text.
const BLOCKS: &[&str] = &[
    "p",
    "div",
    "section",
    "article",
    "main",
    "table",
    "tr",
    "blockquote",
    "figure",
    "figcaption",
    "address",
    "dl",
    "dt",
    "dd",
    "details",
    "summary",
    "body",
    "center",
    "fieldset",
    "caption",
];
/// Text decoded at once at most, so that one huge text node does not pile up.
const DECODE_BATCH: usize = 32 * 1024;

/// Text bounded in memory: the first and the last characters of everything pushed, as
/// [`crate::tools::cap_output`] would cut the whole.
#[derive(Debug)]
pub struct Capture {
    max: usize,
    head: String,
    head_chars: usize,
    /// The last characters, with some slack: trimmed to the tail's size when it holds twice
    /// as many (appending is then a copy, not a loop over characters).
    tail: String,
    tail_chars: usize,
    total: usize,
    /// The line breaks in everything pushed.
    breaks: usize,
}

impl Capture {
    pub fn new(max: usize) -> Self {
        Capture {
            max,
            head: String::new(),
            head_chars: 0,
            tail: String::new(),
            tail_chars: 0,
            total: 0,
            breaks: 0,
        }
    }

    pub fn push_str(&mut self, s: &str) {
        let head_cap = self.max / 2;
        let tail_cap = self.max - head_cap;
        self.breaks += crate::tools::cut::line_breaks(s.as_bytes());
        let mut rest = s;
        if self.head_chars < head_cap {
            let room = head_cap - self.head_chars;
            let end = rest.char_indices().nth(room).map_or(rest.len(), |(i, _)| i);
            let n = rest[..end].chars().count();
            self.head.push_str(&rest[..end]);
            self.head_chars += n;
            self.total += n;
            rest = &rest[end..];
        }
        if rest.is_empty() {
            return;
        }
        let n = rest.chars().count();
        self.total += n;
        if tail_cap == 0 {
            return;
        }
        self.tail.push_str(rest);
        self.tail_chars += n;
        if self.tail_chars > 2 * tail_cap {
            self.trim_tail(tail_cap);
        }
    }

    fn trim_tail(&mut self, keep: usize) {
        if self.tail_chars <= keep {
            return;
        }
        let drop = self.tail_chars - keep;
        let at = self
            .tail
            .char_indices()
            .nth(drop)
            .map_or(self.tail.len(), |(i, _)| i);
        self.tail.drain(..at);
        self.tail_chars = keep;
    }

    /// Characters pushed so far.
    pub fn total(&self) -> usize {
        self.total
    }

    /// The text, or its head and tail with the cut's marker between them.
    pub fn finish(mut self) -> String {
        let tail_cap = self.max - self.max / 2;
        self.trim_tail(tail_cap);
        if self.total <= self.max {
            return self.head + &self.tail;
        }
        let omitted = self.total - self.max;
        let kept = crate::tools::cut::line_breaks(self.head.as_bytes())
            + crate::tools::cut::line_breaks(self.tail.as_bytes());
        let marker = crate::tools::cut::marker(omitted, self.breaks - kept);
        format!("{}\n{marker}\n{}", self.head, self.tail)
    }
}

/// What a pending open of a list holds.
#[derive(Debug)]
struct List {
    ordered: bool,
    next: u32,
}

/// The writer the handlers share: collapses whitespace, places line breaks and prefixes.
#[derive(Debug)]
struct Writer {
    out: Capture,
    /// Inside this many dropped elements.
    dropped: usize,
    /// Inside this many `pre` elements.
    pre: usize,
    /// Line breaks owed before the next text (0–2).
    newlines: usize,
    /// A space owed before the next text on the same line.
    space: bool,
    /// Nothing written on the current line yet.
    line_start: bool,
    /// Written before the next text: a heading's `#`, a list item's `- `, a link's `[`.
    prefix: String,
    /// Open links: their URL, and whether their `[` was written.
    links: Vec<(String, bool)>,
    lists: Vec<List>,
    /// Cells already written in the current table row.
    cells: usize,
    /// Text of the current text node not yet decoded.
    pending: String,
    base: Option<url::Url>,
}

impl Writer {
    fn new(max: usize, base: Option<url::Url>) -> Self {
        Writer {
            out: Capture::new(max),
            dropped: 0,
            pre: 0,
            newlines: 0,
            space: false,
            line_start: true,
            prefix: String::new(),
            links: Vec::new(),
            lists: Vec::new(),
            cells: 0,
            pending: String::new(),
            base,
        }
    }

    fn newline(&mut self, n: usize) {
        if self.out.total() > 0 || !self.prefix.is_empty() {
            self.newlines = self.newlines.max(n);
        }
        self.space = false;
    }

    /// Writes owed breaks, the owed space and the prefixes, then `text` as it is.
    fn emit(&mut self, text: &str) {
        if text.is_empty() {
            return;
        }
        if self.newlines > 0 {
            self.out.push_str(&"\n".repeat(self.newlines));
            self.newlines = 0;
            self.line_start = true;
            self.space = false;
        }
        if self.space && !self.line_start {
            self.out.push_str(" ");
        }
        self.space = false;
        if !self.prefix.is_empty() {
            let p = std::mem::take(&mut self.prefix);
            self.out.push_str(&p);
        }
        for link in self.links.iter_mut().filter(|l| !l.1) {
            link.1 = true;
            self.out.push_str("[");
        }
        self.out.push_str(text);
        self.line_start = text.ends_with('\n');
    }

    /// Decoded text of the document: collapsed outside `pre`.
    fn text(&mut self, text: &str) {
        if self.pre > 0 {
            self.emit(text);
            return;
        }
        let mut words = text
            .split(|c: char| c.is_ascii_whitespace() || c == '\u{a0}')
            .peekable();
        let leading = text.starts_with(|c: char| c.is_ascii_whitespace() || c == '\u{a0}');
        if leading {
            self.space = true;
        }
        let mut first = true;
        while let Some(w) = words.next() {
            if w.is_empty() {
                continue;
            }
            if !first {
                self.space = true;
            }
            self.emit(w);
            first = false;
            if words.peek().is_some() {
                self.space = true;
            }
        }
        if text.ends_with(|c: char| c.is_ascii_whitespace() || c == '\u{a0}') {
            self.space = true;
        }
    }

    /// Decodes and writes the text buffered so far; `all` at the end of a text node, else
    /// keeping an entity that may continue in the next chunk.
    fn flush_text(&mut self, all: bool) {
        let cut = if all {
            self.pending.len()
        } else {
            match self.pending.rfind('&') {
                Some(i) if self.pending.len() - i < 40 => i,
                _ => self.pending.len(),
            }
        };
        if cut == 0 {
            return;
        }
        let rest = self.pending.split_off(cut);
        let chunk = std::mem::replace(&mut self.pending, rest);
        let decoded = html_escape::decode_html_entities(&chunk).into_owned();
        self.text(&decoded);
    }

    fn on_text(&mut self, t: &TextChunk<'_>) {
        if self.dropped > 0 {
            return;
        }
        if t.text_type().allows_html_entities() {
            self.pending.push_str(t.as_str());
            if t.last_in_text_node() {
                self.flush_text(true);
            } else if self.pending.len() >= DECODE_BATCH {
                self.flush_text(false);
            }
        } else {
            self.text(t.as_str());
        }
    }

    /// A start tag; returns what its end tag must undo, when it has one.
    fn on_start(&mut self, el: &Element<'_, '_>) -> Option<Close> {
        let name = el.tag_name();
        if self.dropped > 0 {
            return DROPPED.contains(&name.as_str()).then_some(Close::Dropped);
        }
        if DROPPED.contains(&name.as_str()) {
            // Hidden content is not read either.
            return Some(Close::Dropped);
        }
        if el.has_attribute("hidden") || el.get_attribute("aria-hidden").as_deref() == Some("true")
        {
            return Some(Close::Dropped);
        }
        match name.as_str() {
            "h1" | "h2" | "h3" | "h4" | "h5" | "h6" | "title" => {
                let level = name
                    .strip_prefix('h')
                    .and_then(|n| n.parse().ok())
                    .unwrap_or(1);
                self.newline(2);
                self.prefix = format!("{} ", "#".repeat(level));
                Some(Close::Block(2))
            }
            "br" => {
                self.newlines = (self.newlines + 1).min(2);
                self.space = false;
                None
            }
            "hr" => {
                self.newline(2);
                self.emit("---");
                self.newline(2);
                None
            }
            "li" => {
                self.newline(1);
                let depth = self.lists.len().saturating_sub(1);
                let mark = match self.lists.last_mut() {
                    Some(l) if l.ordered => {
                        let n = l.next;
                        l.next += 1;
                        format!("{n}. ")
                    }
                    Some(_) | None => "- ".to_string(),
                };
                self.prefix = format!("{}{mark}", "  ".repeat(depth));
                Some(Close::Block(1))
            }
            "ul" | "ol" | "menu" => {
                self.newline(1);
                self.lists.push(List {
                    ordered: name == "ol",
                    next: el
                        .get_attribute("start")
                        .and_then(|s| s.trim().parse().ok())
                        .unwrap_or(1),
                });
                Some(Close::List)
            }
            "pre" => {
                self.newline(2);
                self.emit("```\n");
                self.pre += 1;
                Some(Close::Pre)
            }
            "code" if self.pre == 0 => {
                self.emit("`");
                Some(Close::Text("`"))
            }
            "tr" => {
                self.newline(1);
                self.cells = 0;
                Some(Close::Block(1))
            }
            "td" | "th" => {
                if self.cells > 0 {
                    self.space = false;
                    self.emit(" |");
                    self.space = true;
                }
                self.cells += 1;
                None
            }
            "a" => {
                let href = el.get_attribute("href").unwrap_or_default();
                match self.link_target(href.trim()) {
                    Some(url) => {
                        self.links.push((url, false));
                        Some(Close::Link)
                    }
                    None => None,
                }
            }
            _ if BLOCKS.contains(&name.as_str()) => {
                self.newline(2);
                Some(Close::Block(2))
            }
            _ => None,
        }
    }

    /// An absolute URL for a link worth showing: not a fragment, not a script.
    fn link_target(&self, href: &str) -> Option<String> {
        if href.is_empty() || href.starts_with('#') || href.starts_with("javascript:") {
            return None;
        }
        match &self.base {
            Some(base) => base.join(href).ok().map(|u| u.to_string()),
            None => Some(href.to_string()),
        }
    }

    fn on_end(&mut self, close: Close) {
        self.flush_text(true);
        match close {
            Close::Dropped => self.dropped = self.dropped.saturating_sub(1),
            Close::Block(n) => {
                self.prefix.clear();
                self.newline(n);
            }
            Close::List => {
                self.lists.pop();
                self.newline(1);
            }
            Close::Pre => {
                self.pre = self.pre.saturating_sub(1);
                if !self.line_start {
                    self.emit("\n");
                }
                self.emit("```");
                self.newline(2);
            }
            Close::Text(s) => self.emit(s),
            Close::Link => {
                if let Some((url, opened)) = self.links.pop()
                    && opened
                {
                    self.out.push_str(&format!("]({url})"));
                    self.line_start = false;
                }
            }
        }
    }
}

/// What an end tag undoes.
#[derive(Debug, Clone, Copy)]
enum Close {
    Dropped,
    Block(usize),
    List,
    Pre,
    Text(&'static str),
    Link,
}

/// A page being converted: feed it the body's chunks, then [`HtmlText::finish`].
pub struct HtmlText {
    rewriter: HtmlRewriter<'static, fn(&[u8])>,
    writer: Rc<RefCell<Writer>>,
}

fn discard(_: &[u8]) {}

impl HtmlText {
    /// `base` resolves relative links; `charset` is the page's (UTF-8 when absent or unknown);
    /// `max` characters of text are kept (head and tail).
    pub fn new(base: Option<url::Url>, charset: Option<&str>, max: usize) -> Self {
        let writer = Rc::new(RefCell::new(Writer::new(max, base)));
        let on_element = {
            let w = Rc::clone(&writer);
            move |el: &mut Element<'_, '_>| -> HandlerResult {
                let Some(close) = ({
                    let mut wr = w.borrow_mut();
                    wr.flush_text(true);
                    wr.on_start(el)
                }) else {
                    return Ok(());
                };
                let w2 = Rc::clone(&w);
                let registered = el
                    .on_end_tag(Box::new(move |_: &mut EndTag<'_>| -> HandlerResult {
                        w2.borrow_mut().on_end(close);
                        Ok(())
                    }))
                    .is_ok();
                let mut wr = w.borrow_mut();
                match close {
                    // Entered only when its end will be seen: an element that cannot close
                    // must not swallow the rest of the page.
                    Close::Dropped if registered => wr.dropped += 1,
                    Close::Pre if !registered => wr.pre = wr.pre.saturating_sub(1),
                    Close::Dropped
                    | Close::Pre
                    | Close::Block(_)
                    | Close::List
                    | Close::Text(_)
                    | Close::Link => {}
                }
                Ok(())
            }
        };
        let on_text = {
            let w = Rc::clone(&writer);
            move |t: &mut TextChunk<'_>| -> HandlerResult {
                w.borrow_mut().on_text(t);
                Ok(())
            }
        };
        let encoding = charset
            .and_then(|c| encoding_rs::Encoding::for_label(c.trim().as_bytes()))
            .and_then(AsciiCompatibleEncoding::new)
            .unwrap_or_else(AsciiCompatibleEncoding::utf_8);
        let mut settings = Settings::new()
            .append_document_content_handler(DocumentContentHandlers::default().text(on_text))
            .with_encoding(encoding)
            // With no `charset` in the header, the page's own `<meta charset>` says.
            .with_adjust_charset_on_meta_tag(charset.is_none())
            // Real pages are messy: never give up on markup that is ambiguous to a streaming
            // parser.
            .with_strict(false);
        if let Ok(all) = "*".parse::<Selector>() {
            settings = settings.append_element_content_handler((
                Cow::Owned(all),
                ElementContentHandlers::default().element(on_element),
            ));
        }
        HtmlText {
            rewriter: HtmlRewriter::new(settings, discard as fn(&[u8])),
            writer,
        }
    }

    /// Feeds a chunk of the page.
    pub fn write(&mut self, chunk: &[u8]) -> Result<(), String> {
        self.rewriter.write(chunk).map_err(|e| e.to_string())
    }

    /// The text of the page, cut to its head and tail past the maximum.
    pub fn finish(self) -> String {
        let HtmlText { rewriter, writer } = self;
        let _ = rewriter.end();
        let mut w = writer.borrow_mut();
        w.flush_text(true);
        let out = std::mem::replace(&mut w.out, Capture::new(0));
        drop(w);
        out.finish().trim().to_string()
    }
}

/// Converts a whole page at once (for tests and small bodies).
pub fn convert(html: &str, base: Option<url::Url>, max: usize) -> String {
    let mut h = HtmlText::new(base, None, max);
    let _ = h.write(html.as_bytes());
    h.finish()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn text(html: &str) -> String {
        convert(
            html,
            url::Url::parse("http://x.test/dir/page.html").ok(),
            10_000,
        )
    }

    #[test]
    fn a_page_becomes_readable_text_without_scripts_or_navigation() {
        let html = r##"<!doctype html><html><head><title>The Page</title>
            <style>body { color: red }</style><script>var x = "<p>no</p>";</script></head>
            <body><nav><a href="/">Home</a> <a href="/about">About</a></nav>
            <header>Site header</header>
            <main><h1>Hello &amp; welcome</h1>
            <p>Some   <b>bold</b>
               text with a <a href="other.html">link</a> and <code>code()</code>.</p>
            <ul><li>one</li><li>two<ol><li>a</li><li>b</li></ol></li></ul>
            <pre>fn main() {
    println!("hi");
}</pre>
            <table><tr><th>k</th><th>v</th></tr><tr><td>a</td><td>1</td></tr></table>
            <p>caf&eacute; &lt;tag&gt; &#x1F600;</p>
            <a href="javascript:void(0)">js</a> <a href="#top">top</a>
            </main><footer>© footer</footer><script>track()</script></body></html>"##;
        assert_eq!(
            text(html),
            "# The Page\n\n# Hello & welcome\n\nSome bold text with a \
             [link](http://x.test/dir/other.html) and `code()`.\n\n- one\n- two\n  1. a\n  2. b\n\n\
             ```\nfn main() {\n    println!(\"hi\");\n}\n```\n\nk | v\na | 1\n\ncafé <tag> 😀\n\njs top"
        );
    }

    #[test]
    fn an_entity_split_across_chunks_is_decoded() {
        let mut h = HtmlText::new(None, None, 1000);
        h.write(b"<p>fish &am").unwrap();
        h.write(b"p; chips</p>").unwrap();
        assert_eq!(h.finish(), "fish & chips");
    }

    #[test]
    fn unclosed_and_self_closing_elements_do_not_swallow_the_page() {
        assert_eq!(text("<p>a<svg/><p>b<li>c"), "a\n\nb\n- c");
    }

    #[test]
    fn a_latin1_page_is_decoded_with_its_charset() {
        let mut h = HtmlText::new(None, Some("iso-8859-1"), 1000);
        h.write(b"<p>caf\xe9</p>").unwrap();
        assert_eq!(h.finish(), "café");
    }

    #[test]
    fn the_capture_cuts_like_the_tool_output_cap() {
        for whole in ["abcdefghij", "a\nb\nc\nd\ne\nf\ng"] {
            for max in [4, 5, 10, 20] {
                let mut c = Capture::new(max);
                c.push_str(&whole[..3]);
                c.push_str(&whole[3..]);
                assert_eq!(
                    c.finish(),
                    crate::tools::cap_output(whole, max),
                    "max {max}"
                );
            }
        }
    }
}
