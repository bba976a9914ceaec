//! The fake server's answers to what `mm doctor` (and `mm setup`, which runs its model checks)
//! asks a model server: a streamed count, a structured tool call and the answer to its result,
//! then a repeated request read from the cache.

use std::time::Duration;

use serde_json::json;

use super::script::{Chunk, Reply};

/// The answer to the streaming check: three tokens, with usage.
pub fn counted() -> Reply {
    Reply::chunks(
        vec![
            Chunk::text("1"),
            Chunk::text(" 2"),
            Chunk::text(" 3"),
            Chunk::finish("stop"),
            Chunk::Usage {
                prompt: 180,
                completion: 3,
            },
            Chunk::Done,
        ],
        Duration::ZERO,
    )
}

/// The answer to the repeated request: usage with `cached` tokens read from the cache.
pub fn cached(cached: u64) -> Reply {
    let usage = json!({"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 0,
        "model": "fake-model", "choices": [],
        "usage": {"prompt_tokens": 180, "completion_tokens": 1,
                  "prompt_tokens_details": {"cached_tokens": cached}}});
    Reply::chunks(
        vec![
            Chunk::text("1"),
            Chunk::finish("length"),
            Chunk::Raw(usage.to_string()),
            Chunk::Done,
        ],
        Duration::ZERO,
    )
}

/// Every probe answered as a capable server does: the count, a structured call of `get_time`
/// and the answer to its result, 176 of 180 tokens read from the cache.
pub fn probes() -> Vec<Reply> {
    vec![
        counted(),
        Reply::tool_call("get_time", json!({"city": "Paris"})),
        Reply::text("It is 14:05 in Paris."),
        cached(176),
    ]
}
