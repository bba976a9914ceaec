//! What the model receives from an MCP tool's result (docs/tools.md, "MCP tools"): text content
//! joined, other content summarised in one bracketed line (`[image, 12 kB]`). Pure.

use rmcp::model::{CallToolResult, ContentBlock, ResourceContents};

/// Bytes of base64 data once decoded.
fn decoded_len(data: &str) -> usize {
    let data = data.trim_end();
    let padding = data.bytes().rev().take_while(|b| *b == b'=').count();
    (data.len() / 4 * 3 + (data.len() % 4).saturating_sub(1)).saturating_sub(padding)
}

/// `812 B`, `12 kB`, `3.4 MB`.
pub fn size(bytes: usize) -> String {
    if bytes < 1000 {
        format!("{bytes} B")
    } else if bytes < 1_000_000 {
        format!("{} kB", (bytes + 500) / 1000)
    } else {
        format!("{:.1} MB", bytes as f64 / 1e6)
    }
}

fn block(b: &ContentBlock) -> String {
    match b {
        ContentBlock::Text(t) => t.text.clone(),
        ContentBlock::Image(i) => format!("[image, {}]", size(decoded_len(&i.data))),
        ContentBlock::Audio(a) => format!("[audio, {}]", size(decoded_len(&a.data))),
        ContentBlock::ResourceLink(r) => match &r.description {
            Some(d) if !d.is_empty() => format!("[resource link {} ({}): {d}]", r.uri, r.name),
            _ => format!("[resource link {} ({})]", r.uri, r.name),
        },
        ContentBlock::Resource(e) => match &e.resource {
            // A text resource is text: the model reads it.
            ResourceContents::TextResourceContents { uri, text, .. } => {
                format!("[resource {uri}]\n{text}")
            }
            ResourceContents::BlobResourceContents { uri, blob, .. } => {
                format!("[resource {uri}, {}]", size(decoded_len(blob)))
            }
            other => format!("[resource {}]", resource_uri(other)),
        },
        other => format!("[{} content]", content_type(other)),
    }
}

fn resource_uri(r: &ResourceContents) -> String {
    serde_json::to_value(r)
        .ok()
        .and_then(|v| v.get("uri").and_then(|u| u.as_str()).map(str::to_string))
        .unwrap_or_default()
}

fn content_type(b: &ContentBlock) -> String {
    serde_json::to_value(b)
        .ok()
        .and_then(|v| v.get("type").and_then(|t| t.as_str()).map(str::to_string))
        .unwrap_or_else(|| "unknown".to_string())
}

/// The text of a result: its content blocks, one after the other; with no content, the
/// structured content as JSON; with neither, `(no output)`.
pub fn text(r: &CallToolResult) -> String {
    if r.content.is_empty() {
        return match &r.structured_content {
            Some(v) => v.to_string(),
            None => "(no output)".to_string(),
        };
    }
    r.content.iter().map(block).collect::<Vec<_>>().join("\n")
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    fn result(v: serde_json::Value) -> CallToolResult {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn sizes() {
        assert_eq!(size(812), "812 B");
        assert_eq!(size(12_345), "12 kB");
        assert_eq!(size(3_400_000), "3.4 MB");
        assert_eq!(decoded_len("aGVsbG8="), 5);
        assert_eq!(decoded_len("aGVsbG8h"), 6);
        assert_eq!(decoded_len("aGk"), 2);
    }

    #[test]
    fn text_is_joined_and_the_rest_summarised() {
        let png = "A".repeat(16_000);
        let r = result(json!({"content": [
            {"type": "text", "text": "one"},
            {"type": "image", "data": png, "mimeType": "image/png"},
            {"type": "audio", "data": "aGVsbG8=", "mimeType": "audio/wav"},
            {"type": "resource_link", "uri": "test://static/1", "name": "Resource 1", "description": "a text"},
            {"type": "resource", "resource": {"uri": "file:///a.txt", "text": "inside"}},
            {"type": "resource", "resource": {"uri": "file:///b.bin", "blob": "aGVsbG8="}},
            {"type": "text", "text": "two"}
        ]}));
        assert_eq!(
            text(&r),
            "one\n[image, 12 kB]\n[audio, 5 B]\n[resource link test://static/1 (Resource 1): a text]\n[resource file:///a.txt]\ninside\n[resource file:///b.bin, 5 B]\ntwo"
        );
    }

    #[test]
    fn structured_content_stands_in_for_missing_content() {
        let r = result(json!({"content": [], "structuredContent": {"t": 21}}));
        assert_eq!(text(&r), r#"{"t":21}"#);
        assert_eq!(text(&result(json!({"content": []}))), "(no output)");
    }
}
