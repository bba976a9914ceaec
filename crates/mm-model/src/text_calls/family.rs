//! The formats mm recovers, and the model families that write them, as the server's chat
//! template or the model's name tells them.

/// A way of writing tool calls as text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Format {
    /// `<tool_call>{"name": …, "arguments": …}</tool_call>` (Hermes, Qwen 2.5/3, and many).
    Hermes,
    /// `<tools>{…}</tools>` (Qwen2.5-Coder).
    QwenCoder,
    /// `<function=NAME><parameter=KEY>…</parameter></function>` (Qwen3-Coder, Nemotron 3, Seed-OSS).
    QwenXml,
    /// `<tool_call>NAME<arg_key>K</arg_key><arg_value>V</arg_value></tool_call>` (GLM 4.5+).
    Glm,
    /// `<|python_tag|>` then a call (Llama 3.1+).
    Llama,
    /// `[name(key="value"), …]` (Llama 3.2, Llama 4, LFM2 without its markers).
    Pythonic,
    /// `<|tool_call_start|>[name(…)]<|tool_call_end|>` (LFM2).
    Lfm2,
    /// `[TOOL_CALLS]` then a JSON list, `name[ARGS]{…}` or `name{…}` (Mistral).
    Mistral,
    /// `<｜tool▁calls▁begin｜>…<｜tool▁sep｜>…` (DeepSeek R1, V3, V3.1).
    DeepSeek,
    /// `<|tool_calls_section_begin|><|tool_call_begin|>functions.NAME:0…` (Kimi K2).
    Kimi,
    /// `<|channel|>commentary to=functions.NAME …<|message|>{…}<|call|>` (gpt-oss).
    Harmony,
    /// `<|tool_call>call:NAME{…}<tool_call|>` (Gemma 4).
    Gemma,
    /// `<start_function_call>call:NAME{…}<end_function_call>` (FunctionGemma).
    FunctionGemma,
    /// `<|tool_call|>[…]` (Granite 3, Phi-4-mini).
    Granite,
    /// `<｜tool_calls_begin｜><｜tool_call_begin｜><steptml:invoke name=…>…` (Step3).
    Step3,
    /// `<longcat_tool_call>{…}</longcat_tool_call>` (LongCat).
    LongCat,
    /// `<|function_call|>{…}` and `<|message_sep|>function call<|role_sep|>{…}` (GigaChat 3).
    GigaChat,
    /// `<NAME><KEY>value</KEY></NAME>`, the tags an offered tool's name and parameters (the
    /// form Claude-style prompts teach).
    ToolTags,
    /// `Action: ```json [{"tool_name": …, "parameters": …}]```` and `<|START_ACTION|>` (Command-R).
    CommandR,
    /// `Action: NAME` and `Action Input: {…}` on the next line (ReAct).
    React,
    /// `<function=NAME>{…}</function>` and `>>>NAME\n{…}` (Functionary v3.1, v3.2).
    Functionary,
    /// `functools[…]` (Firefunction v2, Phi-4-mini).
    Functools,
    /// A JSON list of calls `[{"name": …, "arguments": …}]` (xLAM).
    Xlam,
    /// `<invoke name="…"><parameter name="…">…</parameter></invoke>` (MiniMax M2, DeepSeek V3.2).
    MiniMax,
    /// `<|tools_prefix|>[{"NAME": {…}}]<|tools_suffix|>` (Apertus).
    Apertus,
    /// `[TOOL_REQUEST]{…}[END_TOOL_REQUEST]` (LM Studio).
    LmStudio,
    /// `<TOOLCALL>[…]</TOOLCALL>` (Nemotron Nano 2).
    Nemotron,
    /// `<|action_start|><|plugin|>{…}<|action_end|>` (InternLM 2).
    InternLm,
    /// `<tool_calls>[…]</tool_calls>` (Hunyuan, Jamba), `<functioncall>` (Glaive),
    /// `<function_call>`.
    ToolCallsTag,
    /// A JSON object `{"name": …, "arguments": …}` alone (Llama 3.x with `parameters`, and
    /// models without a format of their own).
    BareJson,
    /// A call in a code fence: ```` ```json ```` with JSON, ```` ```tool_code ```` with a
    /// pythonic call (Gemma 3).
    Fenced,
}

impl Format {
    /// How `mm doctor` names it.
    pub fn label(self) -> &'static str {
        match self {
            Format::Hermes => "Hermes/Qwen <tool_call> JSON",
            Format::QwenCoder => "Qwen2.5-Coder <tools> JSON",
            Format::QwenXml => "Qwen3-Coder XML <function=…><parameter=…>",
            Format::Glm => "GLM <arg_key>/<arg_value>",
            Format::Llama => "Llama 3 <|python_tag|>",
            Format::Pythonic => "pythonic list [name(key=…)]",
            Format::Lfm2 => "LFM2 <|tool_call_start|>",
            Format::Mistral => "Mistral [TOOL_CALLS]",
            Format::DeepSeek => "DeepSeek <｜tool▁calls▁begin｜>",
            Format::Kimi => "Kimi K2 <|tool_calls_section_begin|>",
            Format::Harmony => "gpt-oss harmony <|channel|>commentary to=functions.…",
            Format::Gemma => "Gemma <|tool_call>call:…",
            Format::FunctionGemma => "FunctionGemma <start_function_call>",
            Format::Granite => "Granite <|tool_call|>",
            Format::Step3 => "Step3 <steptml:invoke name=…>",
            Format::LongCat => "LongCat <longcat_tool_call>",
            Format::GigaChat => "GigaChat <|function_call|> / function call<|role_sep|>",
            Format::ToolTags => "XML named for the tool <NAME><KEY>…</KEY></NAME>",
            Format::CommandR => "Command-R Action: / <|START_ACTION|>",
            Format::React => "ReAct Action: / Action Input:",
            Format::Functionary => "Functionary <function=…> / >>>",
            Format::Functools => "Firefunction functools[…]",
            Format::Xlam => "xLAM JSON list [{\"name\": …}]",
            Format::MiniMax => "MiniMax <invoke name=…>",
            Format::Apertus => "Apertus <|tools_prefix|>",
            Format::LmStudio => "LM Studio [TOOL_REQUEST]",
            Format::Nemotron => "Nemotron <TOOLCALL>",
            Format::InternLm => "InternLM <|action_start|><|plugin|>",
            Format::ToolCallsTag => "tagged JSON (<tool_calls>, <functioncall>)",
            Format::BareJson => "JSON object {\"name\": …, \"arguments\": …}",
            Format::Fenced => "fenced call (```json)",
        }
    }

    /// A short stable id (`mm doctor --json`).
    pub fn id(self) -> &'static str {
        match self {
            Format::Hermes => "hermes",
            Format::QwenCoder => "qwen-coder",
            Format::QwenXml => "qwen-xml",
            Format::Glm => "glm",
            Format::Llama => "llama",
            Format::Pythonic => "pythonic",
            Format::Lfm2 => "lfm2",
            Format::Mistral => "mistral",
            Format::DeepSeek => "deepseek",
            Format::Kimi => "kimi",
            Format::Harmony => "harmony",
            Format::Gemma => "gemma",
            Format::FunctionGemma => "function-gemma",
            Format::Granite => "granite",
            Format::Step3 => "step3",
            Format::LongCat => "longcat",
            Format::GigaChat => "gigachat",
            Format::ToolTags => "tool-tags",
            Format::CommandR => "command-r",
            Format::React => "react",
            Format::Functionary => "functionary",
            Format::Functools => "functools",
            Format::Xlam => "xlam",
            Format::MiniMax => "minimax",
            Format::Apertus => "apertus",
            Format::LmStudio => "lm-studio",
            Format::Nemotron => "nemotron",
            Format::InternLm => "internlm",
            Format::ToolCallsTag => "tool-calls-tag",
            Format::BareJson => "json",
            Format::Fenced => "fenced",
        }
    }

    /// Formats without a marker of their own: text that any model might write for another
    /// reason (a JSON example, a list), read as calls only under the strict rules of
    /// docs/engine.md.
    pub fn is_markerless(self) -> bool {
        matches!(
            self,
            Format::BareJson | Format::Fenced | Format::Xlam | Format::Pythonic | Format::ToolTags
        )
    }
}

/// A model family, whose own formats mm prefers when the server or the model's name says it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Family {
    /// Hermes and Qwen 2.5/3: `<tool_call>` JSON (Qwen2.5-Coder also `<tools>`).
    Qwen,
    /// Qwen3-Coder, Nemotron 3, Seed-OSS: `<function=…><parameter=…>`.
    Qwen3Coder,
    Glm,
    /// Llama 3.x and 4: JSON with `parameters`, `<|python_tag|>`, pythonic lists.
    Llama,
    Lfm2,
    Mistral,
    DeepSeek,
    Kimi,
    GptOss,
    /// Gemma 3 (fenced `tool_code`), Gemma 4, FunctionGemma.
    Gemma,
    Granite,
    CommandR,
    Functionary,
    /// Firefunction v2 and Phi-4-mini: `functools[…]`.
    Firefunction,
    Xlam,
    MiniMax,
    Apertus,
    Nemotron,
    Step3,
    LongCat,
    GigaChat,
}

impl Family {
    pub fn label(self) -> &'static str {
        match self {
            Family::Qwen => "Qwen/Hermes",
            Family::Qwen3Coder => "Qwen3-Coder",
            Family::Glm => "GLM",
            Family::Llama => "Llama",
            Family::Lfm2 => "LFM2",
            Family::Mistral => "Mistral",
            Family::DeepSeek => "DeepSeek",
            Family::Kimi => "Kimi K2",
            Family::GptOss => "gpt-oss",
            Family::Gemma => "Gemma",
            Family::Granite => "Granite",
            Family::CommandR => "Command-R",
            Family::Functionary => "Functionary",
            Family::Firefunction => "Firefunction/Phi-4-mini",
            Family::Xlam => "xLAM",
            Family::MiniMax => "MiniMax",
            Family::Apertus => "Apertus",
            Family::Nemotron => "Nemotron",
            Family::Step3 => "Step3",
            Family::LongCat => "LongCat",
            Family::GigaChat => "GigaChat",
        }
    }

    /// Whether the family writes this format (its markerless formats are then read more
    /// freely, and tried with the formats that have markers).
    pub fn writes(self, format: Format) -> bool {
        use Format as F;
        match self {
            Family::Qwen => matches!(format, F::Hermes | F::QwenCoder | F::Fenced),
            Family::Qwen3Coder => matches!(format, F::QwenXml | F::Hermes),
            Family::Glm => matches!(format, F::Glm),
            Family::Llama => matches!(format, F::Llama | F::BareJson | F::Pythonic),
            Family::Lfm2 => matches!(format, F::Lfm2 | F::Pythonic),
            Family::Mistral => matches!(format, F::Mistral),
            Family::DeepSeek => matches!(format, F::DeepSeek | F::MiniMax),
            Family::Kimi => matches!(format, F::Kimi),
            Family::GptOss => matches!(format, F::Harmony),
            Family::Gemma => matches!(format, F::Gemma | F::FunctionGemma | F::Fenced),
            Family::Granite => matches!(format, F::Granite | F::Hermes),
            Family::CommandR => matches!(format, F::CommandR),
            Family::Functionary => matches!(format, F::Functionary),
            Family::Firefunction => matches!(format, F::Functools | F::Granite),
            Family::Xlam => matches!(format, F::Xlam | F::BareJson),
            Family::MiniMax => matches!(format, F::MiniMax),
            Family::Apertus => matches!(format, F::Apertus),
            Family::Nemotron => matches!(format, F::Nemotron),
            Family::Step3 => matches!(format, F::Step3 | F::QwenXml),
            Family::LongCat => matches!(format, F::LongCat),
            Family::GigaChat => matches!(format, F::GigaChat),
        }
    }

    /// The family a chat template (llama.cpp `/props` `chat_template`, Ollama `/api/show`
    /// `template`) is written for, from the markers it renders calls with.
    pub fn from_template(template: &str) -> Option<Family> {
        let has = |s: &str| template.contains(s);
        let family = if has("<|channel|>") && (has("to=functions") || has("<|constrain|>")) {
            Family::GptOss
        } else if has("steptml") {
            Family::Step3
        } else if has("tool▁calls▁begin") || has("｜DSML｜") {
            Family::DeepSeek
        } else if has("<|tool_calls_section_begin|>") || has("<|tool_call_argument_begin|>") {
            Family::Kimi
        } else if has("<longcat_tool_call>") {
            Family::LongCat
        } else if has("<|function_call|>") || has("function call<|role_sep|>") {
            Family::GigaChat
        } else if has("<minimax:tool_call>") {
            Family::MiniMax
        } else if has("<arg_key>") {
            Family::Glm
        } else if has("<|tool_call_start|>") {
            Family::Lfm2
        } else if has("<|tools_prefix|>") {
            Family::Apertus
        } else if has("<|tool_call>") || has("<start_function_call>") {
            Family::Gemma
        } else if has("<|START_ACTION|>") || has("directly_answer") || has("directly-answer") {
            Family::CommandR
        } else if has("[TOOL_CALLS]") {
            Family::Mistral
        } else if has("<parameter=") && has("<function=") {
            Family::Qwen3Coder
        } else if has("functools[") {
            Family::Firefunction
        } else if has("<function=") || (has(">>>") && (has("all\n") || has("'all'"))) {
            Family::Functionary
        } else if has("<TOOLCALL>") {
            Family::Nemotron
        } else if has("<|tool_call|>") {
            Family::Granite
        } else if has("<tool_call>") {
            Family::Qwen
        } else if has("<|python_tag|>") || (has("<|eot_id|>") && has("parameters")) {
            Family::Llama
        } else {
            return None;
        };
        Some(family)
    }

    /// The family a model's name says (`Qwen/Qwen3-8B`, `llama3.2:3b`, `mistral-small3.2`).
    pub fn from_name(name: &str) -> Option<Family> {
        let name = name.to_ascii_lowercase();
        let has = |s: &str| name.contains(s);
        let family = if has("gpt-oss") || has("gpt_oss") {
            Family::GptOss
        } else if has("deepseek") {
            Family::DeepSeek
        } else if has("kimi") {
            Family::Kimi
        } else if has("minimax") {
            Family::MiniMax
        } else if has("longcat") {
            Family::LongCat
        } else if has("gigachat") {
            Family::GigaChat
        } else if has("step3") || has("step-3") {
            Family::Step3
        } else if has("glm") {
            Family::Glm
        } else if [
            "qwen3-coder",
            "qwen3coder",
            "seed-oss",
            "nemotron-3",
            "nemotron3",
        ]
        .iter()
        .any(|m| has(m))
        {
            Family::Qwen3Coder
        } else if has("nemotron") && has("nano") {
            Family::Nemotron
        } else if has("lfm2") || has("lfm-2") {
            Family::Lfm2
        } else if has("apertus") {
            Family::Apertus
        } else if has("gemma") {
            Family::Gemma
        } else if has("command-r") || has("command-a") || has("c4ai") {
            Family::CommandR
        } else if has("functionary") {
            Family::Functionary
        } else if has("firefunction") || has("phi-4-mini") || has("phi4-mini") {
            Family::Firefunction
        } else if has("xlam") {
            Family::Xlam
        } else if has("granite") {
            Family::Granite
        } else if [
            "mistral",
            "ministral",
            "mixtral",
            "devstral",
            "magistral",
            "codestral",
            "pixtral",
        ]
        .iter()
        .any(|m| has(m))
        {
            Family::Mistral
        } else if has("llama") {
            Family::Llama
        } else if has("qwen") || has("qwq") || has("hermes") {
            Family::Qwen
        } else {
            return None;
        };
        Some(family)
    }

    /// The template's family, else the name's.
    pub fn detect(template: Option<&str>, name: &str) -> Option<Family> {
        template
            .and_then(Family::from_template)
            .or_else(|| Family::from_name(name))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn templates_and_names_tell_the_family() {
        assert_eq!(
            Family::from_template(
                "{{- '<tool_call>\\n' + tool_call | tojson + '\\n</tool_call>' }}"
            ),
            Some(Family::Qwen)
        );
        assert_eq!(
            Family::from_template("<tool_call>\n<function={{ name }}>\n<parameter={{ k }}>"),
            Some(Family::Qwen3Coder)
        );
        assert_eq!(
            Family::from_template("{{ '<|python_tag|>' }}{{ '<|eot_id|>' }}"),
            Some(Family::Llama)
        );
        assert_eq!(Family::from_template("{{ bos_token }}{{ content }}"), None);
        assert_eq!(Family::from_name("Qwen/Qwen3-8B"), Some(Family::Qwen));
        assert_eq!(Family::from_name("llama3.2:3b"), Some(Family::Llama));
        assert_eq!(
            Family::from_name("unsloth/Qwen3-Coder-30B-A3B-Instruct-GGUF"),
            Some(Family::Qwen3Coder)
        );
        assert_eq!(
            Family::from_name("mistral-small3.2:24b"),
            Some(Family::Mistral)
        );
        assert_eq!(Family::from_name("smollm2-135m-instruct"), None);
        assert_eq!(
            Family::detect(Some("[TOOL_CALLS]"), "qwen3"),
            Some(Family::Mistral)
        );
        assert_eq!(
            Family::from_template("<｜tool_calls_begin｜><steptml:invoke name=\"{{ n }}\">"),
            Some(Family::Step3)
        );
        assert_eq!(
            Family::from_template("{{ '<longcat_tool_call>' }}"),
            Some(Family::LongCat)
        );
        assert_eq!(
            Family::from_template("{{ '<|function_call|>' }}"),
            Some(Family::GigaChat)
        );
        assert_eq!(
            Family::from_name("ai-sage/GigaChat3-10B-A1.8B"),
            Some(Family::GigaChat)
        );
    }
}
