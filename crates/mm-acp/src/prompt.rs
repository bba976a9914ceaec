//! Step 1 of the prompt pipeline (docs/engine.md, "The prompt pipeline"): a `session/prompt`'s
//! content blocks flattened into the text the engine takes. Everything after step 1 is the
//! engine's.

use std::path::PathBuf;

use agent_client_protocol::v1::schema::ContentBlock;

/// The flattened prompt: the text, and the files `resource_link` blocks attached (for the
/// engine's `@path` deduplication).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Flattened {
    pub text: String,
    pub attached: Vec<PathBuf>,
}

/// Text blocks verbatim; each `resource_link` replaced in place by `\n[attached file: <path>]`;
/// other blocks dropped.
pub fn flatten(blocks: &[ContentBlock]) -> Flattened {
    let mut out = Flattened::default();
    for block in blocks {
        match block {
            ContentBlock::Text(t) => out.text.push_str(&t.text),
            ContentBlock::ResourceLink(link) => {
                let (shown, path) = link_target(&link.uri);
                out.text.push_str("\n[attached file: ");
                out.text.push_str(&shown);
                out.text.push(']');
                if let Some(p) = path {
                    out.attached.push(p);
                }
            }
            // Images, audio, embedded resources and whatever later versions add: dropped.
            _ => {}
        }
    }
    out
}

/// What a `resource_link` URI shows as, and the local path it names when it is a `file:` URI:
/// without `file://`, percent-decoded, without `?query` or `#fragment`. Any other URI is kept as
/// it is.
fn link_target(uri: &str) -> (String, Option<PathBuf>) {
    let Some(rest) = uri.strip_prefix("file://") else {
        return (uri.to_string(), None);
    };
    let end = rest.find(['?', '#']).unwrap_or(rest.len());
    let path = percent_decode(&rest[..end]);
    (path.clone(), Some(PathBuf::from(path)))
}

/// `%XX` sequences decoded as bytes (then read as UTF-8, lossily); a `%` not followed by two hex
/// digits is kept.
fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && i + 2 < bytes.len()
            && let (Some(h), Some(l)) = (hex(bytes[i + 1]), hex(bytes[i + 2]))
        {
            out.push(h * 16 + l);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn hex(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    fn blocks(v: serde_json::Value) -> Vec<ContentBlock> {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn text_blocks_are_concatenated_verbatim() {
        let f = flatten(&blocks(json!([
            {"type": "text", "text": "  hello "},
            {"type": "text", "text": "world\n"}
        ])));
        assert_eq!(f.text, "  hello world\n");
        assert!(f.attached.is_empty());
    }

    #[test]
    fn resource_link_becomes_an_attached_file_line_in_place() {
        let f = flatten(&blocks(json!([
            {"type": "text", "text": "look at"},
            {"type": "resource_link", "name": "a b.rs", "uri": "file:///home/u/a%20b.rs?x=1#L3"},
            {"type": "text", "text": " please"}
        ])));
        assert_eq!(f.text, "look at\n[attached file: /home/u/a b.rs] please");
        assert_eq!(f.attached, vec![PathBuf::from("/home/u/a b.rs")]);
    }

    #[test]
    fn non_file_uri_is_kept_as_it_is() {
        let f = flatten(&blocks(json!([
            {"type": "resource_link", "name": "x", "uri": "https://example.com/a%20b?q#f"}
        ])));
        assert_eq!(f.text, "\n[attached file: https://example.com/a%20b?q#f]");
        assert!(f.attached.is_empty());
    }

    #[test]
    fn other_blocks_are_dropped() {
        let f = flatten(&blocks(json!([
            {"type": "image", "data": "AAAA", "mimeType": "image/png"},
            {"type": "resource", "resource": {"uri": "file:///x", "text": "t"}},
            {"type": "text", "text": "hi"}
        ])));
        assert_eq!(f.text, "hi");
    }

    #[test]
    fn percent_decoding_keeps_broken_sequences_and_reads_utf8() {
        assert_eq!(percent_decode("%C3%A9t%C3%A9"), "été");
        assert_eq!(percent_decode("100%"), "100%");
        assert_eq!(percent_decode("%zz%4"), "%zz%4");
    }
}
