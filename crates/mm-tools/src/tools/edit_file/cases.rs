//! The corpus of real failed edits (issue 37): each case is a file, an `edit_file` call and what
//! a careful human would accept — the file it must become, the file left as it is with a word that
//! the edit is already there, or a refusal — and where it came from: a user's report in a public
//! issue, or a peer's own fixture for its fuzzy matcher. Written for mm from those sources (the
//! snippets are the users' test data, the cases and expectations are ours). Plain `std` data, so
//! that the same table can be run against another matcher.

/// What a careful human accepts.
#[derive(Clone, Copy, Debug)]
pub enum Expect {
    /// The file becomes these bytes.
    Lands(&'static [u8]),
    /// The file stays as it is and the answer says the edit is already there (not a failure).
    Same,
    /// The file stays as it is: the call is refused (or changes nothing).
    Refuses,
}

/// What the model got wrong (or right), for the figures by kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kind {
    /// An exact edit: the peers' own baseline.
    Exact,
    /// Indentation missing, or in other units.
    Indentation,
    /// Spaces where the file has tabs.
    Tabs,
    /// Line-number prefixes copied from a read.
    LineNumbers,
    /// A patch (SEARCH/REPLACE, unified hunk, Codex patch, `-`/`+` lines) given as `old_text`.
    Patch,
    /// JSON-escaped twice: a literal `\n`, `\"`.
    Escaped,
    /// Curly quotes, dashes, no-break spaces the model typed plain.
    Lookalike,
    /// Whitespace inside lines.
    InnerSpace,
    /// Blank lines missing or extra.
    BlankLines,
    /// `...` standing for unchanged lines.
    Elision,
    /// The edit is already in the file.
    AlreadyApplied,
    /// CRLF files, mixed endings.
    LineEndings,
    /// Latin-1, Windows-1252, UTF-16, byte-order marks, binary.
    Encoding,
    /// Text that looks escaped, numbered, elided or patched and is not: it stays as it is.
    Literal,
    /// `old_text` matches several places.
    Ambiguous,
    /// `old_text` describes code the file does not have.
    Hallucinated,
    /// `old_text` from an earlier version of the file.
    Stale,
    /// `old_text` ends inside a line or a word.
    Truncated,
    /// An empty `old_text`.
    EmptyOld,
}

/// One failed edit.
#[derive(Clone, Copy, Debug)]
pub struct Case {
    pub name: &'static str,
    /// A URL, or `owner/repo path`.
    pub source: &'static str,
    pub kind: Kind,
    pub file: &'static [u8],
    pub old: &'static str,
    pub new: &'static str,
    pub all: bool,
    pub expect: Expect,
    /// A lenient matcher would get it wrong (edit the wrong place, or change what must stay).
    pub trap: bool,
}

impl Case {
    const BASE: Case = Case {
        name: "",
        source: "",
        kind: Kind::Exact,
        file: b"",
        old: "",
        new: "",
        all: false,
        expect: Expect::Refuses,
        trap: false,
    };
}

const OPENCODE: &str = "anomalyco/opencode packages/opencode/test/tool/edit.test.ts";
const AIDER: &str = "Aider-AI/aider tests/basic/test_editblock.py";
const AIDER_DOTS: &str = "Aider-AI/aider aider/coders/editblock_coder.py (try_dotdotdots)";
const ROO: &str =
    "RooCodeInc/Roo-Code src/core/diff/strategies/__tests__/multi-search-replace.spec.ts";
const CODEX: &str = "openai/codex codex-rs/apply-patch/src/seek_sequence.rs";
const CODEX_PATCH: &str = "openai/codex codex-rs/apply-patch/apply_patch_tool_instructions.md";
const GEMINI: &str = "google-gemini/gemini-cli packages/core/src/utils/editCorrector.test.ts";
const ISSUE37: &str = "mm issue 37 (Edits that land)";
const ISSUE41: &str = "mm issue 41, point 7 (legacy encodings)";

const CALCULATE: &[u8] = b"function calculate(a, b) {\n  const temp = a + b;\n  const result = temp * 2;\n  return result;\n}\n";
const SPHERES: &[u8] = b"            g_audioFeatures[0].dominantFreq = live.dominantFreq;\n        }\n\n        // Build tree spheres with CONTINUOUS time + live audio (no jerk)\n        buildSpheres(t);\n";
const SPHERES_OLD: &str = "            g_audioFeatures[0].dominantFreq = live.dominantFreq;\n        }\n\n        // Build tree spheres";
const DART: &[u8] = b"import 'dart:async';\nimport 'dart:convert';\nimport 'dart:io';\nimport 'dart:io';\n\nclass VaultProvider {}\n";
const STORE: &[u8] = b"class Store:\n    def get(self, key):\n        return self.data[key]\n\n    def put(self, key, value):\n        self.data[key] = value\n\n    def drop(self, key):\n        del self.data[key]\n";
const SERVER: &[u8] = b"[server]\n    timeout = 30\n    retries = 3\n";
const SERVER_60: &[u8] = b"[server]\n    timeout = 60\n    retries = 3\n";

pub const CASES: &[Case] = &[
    // ------------------------------------------------ OpenCode's replacer table
    Case {
        name: "oc_exact_one_line",
        source: OPENCODE,
        file: b"function hello() {\n  console.log(\"world\");\n}\n",
        old: "console.log(\"world\");",
        new: "console.log(\"universe\");",
        expect: Expect::Lands(b"function hello() {\n  console.log(\"universe\");\n}\n"),
        ..Case::BASE
    },
    Case {
        name: "oc_exact_two_lines",
        source: OPENCODE,
        file: b"if (condition) {\n  doSomething();\n  doSomethingElse();\n}\n",
        old: "  doSomething();\n  doSomethingElse();",
        new: "  doNewThing();\n  doAnotherThing();",
        expect: Expect::Lands(b"if (condition) {\n  doNewThing();\n  doAnotherThing();\n}\n"),
        ..Case::BASE
    },
    Case {
        name: "oc_trailing_spaces_kept",
        source: OPENCODE,
        file: b"const x = 5;   \nconst y = 10;\n",
        old: "const x = 5;",
        new: "const x = 15;",
        expect: Expect::Lands(b"const x = 15;   \nconst y = 10;\n"),
        ..Case::BASE
    },
    Case {
        name: "oc_flat_old_and_new",
        source: OPENCODE,
        kind: Kind::Indentation,
        file: b"  if (true) {\n    return false;\n  }\n",
        old: "if (true) {\nreturn false;\n}",
        new: "if (false) {\nreturn true;\n}",
        expect: Expect::Lands(b"  if (false) {\n    return true;\n  }\n"),
        ..Case::BASE
    },
    Case {
        name: "oc_anchor_hallucinated_middle",
        source: OPENCODE,
        kind: Kind::Hallucinated,
        file: CALCULATE,
        old: "function calculate(a, b) {\n  // different middle content\n  return result;\n}",
        new: "function calculate(a, b) {\n  return a * b * 2;\n}",
        trap: true,
        ..Case::BASE
    },
    Case {
        name: "oc_anchor_class",
        source: OPENCODE,
        kind: Kind::Hallucinated,
        file: b"class MyClass {\n  constructor() {\n    this.value = 0;\n  }\n\n  getValue() {\n    return this.value;\n  }\n}\n",
        old: "class MyClass {\n  // different implementation\n}",
        new: "class MyClass {\n  constructor() {\n    this.value = 42;\n  }\n}",
        trap: true,
        ..Case::BASE
    },
    Case {
        name: "oc_tab_line_spaces_old",
        source: OPENCODE,
        kind: Kind::Tabs,
        file: b"function test() {\n\tconsole.log(\"hello\");\n}\n",
        old: "  console.log(\"hello\");",
        new: "  console.log(\"world\");",
        expect: Expect::Lands(b"function test() {\n\tconsole.log(\"world\");\n}\n"),
        ..Case::BASE
    },
    Case {
        name: "oc_spaced_out_line",
        source: OPENCODE,
        kind: Kind::InnerSpace,
        file: b"const   x    =     5;\n",
        old: "const x = 5;",
        new: "const x = 10;",
        expect: Expect::Lands(b"const x = 10;\n"),
        ..Case::BASE
    },
    Case {
        name: "oc_tabs_inside_line",
        source: OPENCODE,
        kind: Kind::InnerSpace,
        file: b"if\t(  condition\t) {\n  run();\n}\n",
        old: "if ( condition ) {",
        new: "if (newCondition) {",
        expect: Expect::Lands(b"if (newCondition) {\n  run();\n}\n"),
        ..Case::BASE
    },
    Case {
        name: "oc_nested_flat",
        source: OPENCODE,
        kind: Kind::Indentation,
        file: b"    function nested() {\n      console.log(\"deeply nested\");\n      return true;\n    }\n",
        old: "function nested() {\n  console.log(\"deeply nested\");\n  return true;\n}",
        new: "function nested() {\n  console.log(\"updated\");\n  return false;\n}",
        expect: Expect::Lands(
            b"    function nested() {\n      console.log(\"updated\");\n      return false;\n    }\n",
        ),
        ..Case::BASE
    },
    Case {
        name: "oc_levels_flattened",
        source: OPENCODE,
        kind: Kind::Indentation,
        file: b"  if (true) {\n    console.log(\"level 1\");\n      console.log(\"level 2\");\n  }\n",
        old: "if (true) {\nconsole.log(\"level 1\");\n  console.log(\"level 2\");\n}",
        new: "if (true) {\nconsole.log(\"updated\");\n}",
        expect: Expect::Lands(b"  if (true) {\n    console.log(\"updated\");\n  }\n"),
        ..Case::BASE
    },
    Case {
        name: "oc_replace_all_three",
        source: OPENCODE,
        file: b"console.log(\"test\");\nconsole.log(\"test\");\nconsole.log(\"test\");\n",
        old: "console.log(\"test\");",
        new: "console.log(\"updated\");",
        all: true,
        expect: Expect::Lands(
            b"console.log(\"updated\");\nconsole.log(\"updated\");\nconsole.log(\"updated\");\n",
        ),
        ..Case::BASE
    },
    Case {
        name: "oc_two_matches",
        source: OPENCODE,
        kind: Kind::Ambiguous,
        file: b"console.log(\"test\");\nconsole.log(\"test\");\n",
        old: "console.log(\"test\");",
        new: "console.log(\"updated\");",
        trap: true,
        ..Case::BASE
    },
    Case {
        name: "oc_not_found",
        source: OPENCODE,
        kind: Kind::Hallucinated,
        file: b"console.log(\"hello\");\n",
        old: "nonexistent string",
        new: "updated",
        ..Case::BASE
    },
    Case {
        name: "oc_three_times",
        source: OPENCODE,
        kind: Kind::Ambiguous,
        file: b"test\ntest\ndifferent content\ntest\n",
        old: "test",
        new: "updated",
        trap: true,
        ..Case::BASE
    },
    Case {
        name: "oc_regex_characters",
        source: OPENCODE,
        file: concat!(r"const regex = /[.*+?^${}()|[\]\\]/g;", "\n").as_bytes(),
        old: r"/[.*+?^${}()|[\]\\]/g",
        new: r"/\w+/g",
        expect: Expect::Lands(concat!(r"const regex = /\w+/g;", "\n").as_bytes()),
        ..Case::BASE
    },
    Case {
        name: "oc_unicode",
        source: OPENCODE,
        file: "const message = \"Hello 世界! 🌍\";\n".as_bytes(),
        old: "Hello 世界! 🌍",
        new: "Hello World! 🌎",
        expect: Expect::Lands("const message = \"Hello World! 🌎\";\n".as_bytes()),
        ..Case::BASE
    },
    Case {
        name: "oc_escaped_newline_in_old",
        source: OPENCODE,
        kind: Kind::Escaped,
        file: b"console.log(\"Hello\nWorld\");\n",
        old: "console.log(\"Hello\\nWorld\");",
        new: "console.log(\"Hello\nUniverse\");",
        expect: Expect::Lands(b"console.log(\"Hello\nUniverse\");\n"),
        ..Case::BASE
    },
    Case {
        name: "oc_escaped_apostrophe",
        source: OPENCODE,
        kind: Kind::Escaped,
        file: b"const str = 'It's working';\n",
        old: "const str = 'It\\'s working';",
        new: "const str = 'It's fixed';",
        expect: Expect::Lands(b"const str = 'It's fixed';\n"),
        ..Case::BASE
    },
    Case {
        name: "oc_escaped_dollar",
        source: OPENCODE,
        kind: Kind::Escaped,
        file: b"const template = `Hello ${name}`;\n",
        old: "const template = `Hello \\${name}`;",
        new: "const template = `Hi ${name}`;",
        expect: Expect::Lands(b"const template = `Hi ${name}`;\n"),
        ..Case::BASE
    },
    Case {
        name: "oc_doubled_backslashes",
        source: OPENCODE,
        kind: Kind::Escaped,
        file: concat!(r"const path = 'C:\Users\test';", "\n").as_bytes(),
        old: r"const path = 'C:\\Users\\test';",
        new: r"const path = 'C:\Users\admin';",
        expect: Expect::Lands(concat!(r"const path = 'C:\Users\admin';", "\n").as_bytes()),
        ..Case::BASE
    },
    Case {
        name: "oc_replace_all_word",
        source: OPENCODE,
        file: b"debug('start');\ndebug('middle');\ndebug('end');\n",
        old: "debug",
        new: "log",
        all: true,
        expect: Expect::Lands(b"log('start');\nlog('middle');\nlog('end');\n"),
        ..Case::BASE
    },
    Case {
        name: "oc_replace_all_digit",
        source: OPENCODE,
        file: b"const x = 1; const y = 1; const z = 1;\n",
        old: "1",
        new: "2",
        all: true,
        expect: Expect::Lands(b"const x = 2; const y = 2; const z = 2;\n"),
        ..Case::BASE
    },
    Case {
        name: "oc_block_indented",
        source: OPENCODE,
        kind: Kind::Indentation,
        file: b"  function test() {\n    return true;\n  }\n",
        old: "function test() {\n  return true;\n}",
        new: "function test() {\n  return false;\n}",
        expect: Expect::Lands(b"  function test() {\n    return false;\n  }\n"),
        ..Case::BASE
    },
    Case {
        name: "oc_padded_value",
        source: OPENCODE,
        file: b"\n  const value = 42;  \n",
        old: "const value = 42;",
        new: "const value = 24;",
        expect: Expect::Lands(b"\n  const value = 24;  \n"),
        ..Case::BASE
    },
    Case {
        name: "oc_context_aware_hallucinated",
        source: OPENCODE,
        kind: Kind::Hallucinated,
        file: CALCULATE,
        old: "function calculate(a, b) {\n  // some different content here\n  // more different content\n  return result;\n}",
        new: "function calculate(a, b) {\n  return (a + b) * 2;\n}",
        trap: true,
        ..Case::BASE
    },
    Case {
        name: "oc_context_aware_class",
        source: OPENCODE,
        kind: Kind::Hallucinated,
        file: b"class TestClass {\n  constructor() {\n    this.value = 0;\n  }\n\n  method() {\n    return this.value;\n  }\n}\n",
        old: "class TestClass {\n  // different implementation\n  // with multiple lines\n}",
        new: "class TestClass {\n  getValue() { return 42; }\n}",
        trap: true,
        ..Case::BASE
    },
    Case {
        name: "oc_tab_padded",
        source: OPENCODE,
        file: b"\tconsole.log(\"test\");\t\n",
        old: "console.log(\"test\");",
        new: "console.log(\"updated\");",
        expect: Expect::Lands(b"\tconsole.log(\"updated\");\t\n"),
        ..Case::BASE
    },
    Case {
        name: "oc_blank_padded_block",
        source: OPENCODE,
        kind: Kind::Indentation,
        file: b"  \nfunction test() {\n  return 'value';\n}\n  \n",
        old: "function test() {\nreturn 'value';\n}",
        new: "function test() {\nreturn 'new value';\n}",
        expect: Expect::Lands(b"  \nfunction test() {\n  return 'new value';\n}\n  \n"),
        ..Case::BASE
    },
    Case {
        name: "oc_same_old_new",
        source: OPENCODE,
        file: b"console.log(\"test\");\n",
        old: "console.log(\"test\");",
        new: "console.log(\"test\");",
        ..Case::BASE
    },
    Case {
        name: "oc_anchor_two_lines",
        source: OPENCODE,
        kind: Kind::Hallucinated,
        file: b"function test() {\n  return true;\n}\n",
        old: "function test() {\n  // middle\n}",
        new: "function test() {\n  return false;\n}",
        trap: true,
        ..Case::BASE
    },
    Case {
        name: "oc_context_trailing_newline",
        source: OPENCODE,
        kind: Kind::Hallucinated,
        file: b"class Test {\n  method1() {\n    return 1;\n  }\n}\n",
        old: "class Test {\n  // different content\n}\n",
        new: "class Test {\n  method2() { return 2; }\n}",
        trap: true,
        ..Case::BASE
    },
    Case {
        name: "oc_empty_file_empty_old",
        source: OPENCODE,
        kind: Kind::EmptyOld,
        file: b"",
        old: "",
        new: "new content",
        expect: Expect::Lands(b"new content"),
        ..Case::BASE
    },
    Case {
        name: "oc_mixed_tabs_spaces_inside",
        source: OPENCODE,
        kind: Kind::InnerSpace,
        file: b"if\t \t( \tcondition\t )\t{\n",
        old: "if ( condition ) {",
        new: "if (newCondition) {",
        expect: Expect::Lands(b"if (newCondition) {\n"),
        ..Case::BASE
    },
    Case {
        name: "oc_literal_tab_escape",
        source: OPENCODE,
        kind: Kind::Literal,
        file: b"const msg = `Hello\\tWorld`;\n",
        old: "const msg = `Hello\\tWorld`;",
        new: "const msg = `Hi\\tWorld`;",
        expect: Expect::Lands(b"const msg = `Hi\\tWorld`;\n"),
        trap: true,
        ..Case::BASE
    },
    Case {
        name: "oc_literal_newline_escape",
        source: OPENCODE,
        kind: Kind::Literal,
        file: b"console.log(\"Line1\\nLine2\");\n",
        old: "console.log(\"Line1\\nLine2\");",
        new: "console.log(\"First\\nSecond\");",
        expect: Expect::Lands(b"console.log(\"First\\nSecond\");\n"),
        trap: true,
        ..Case::BASE
    },
    Case {
        name: "oc_bom_first_line",
        source: OPENCODE,
        kind: Kind::Encoding,
        file: b"\xEF\xBB\xBFusing System;\nclass Test {}\n",
        old: "using System;",
        new: "using Up;",
        expect: Expect::Lands(b"\xEF\xBB\xBFusing Up;\nclass Test {}\n"),
        ..Case::BASE
    },
    Case {
        name: "oc_crlf_file_lf_args",
        source: OPENCODE,
        kind: Kind::LineEndings,
        file: b"alpha\r\nbeta\r\ngamma\r\n",
        old: "alpha\nbeta\ngamma",
        new: "alpha\nbeta-updated\ngamma",
        expect: Expect::Lands(b"alpha\r\nbeta-updated\r\ngamma\r\n"),
        ..Case::BASE
    },
    Case {
        name: "oc_lf_file_crlf_args",
        source: OPENCODE,
        kind: Kind::LineEndings,
        file: b"alpha\nbeta\ngamma\n",
        old: "alpha\r\nbeta\r\ngamma",
        new: "alpha\r\nbeta-updated\r\ngamma",
        expect: Expect::Lands(b"alpha\nbeta-updated\ngamma\n"),
        ..Case::BASE
    },
    Case {
        name: "mixed_endings_kept",
        source: OPENCODE,
        kind: Kind::LineEndings,
        file: b"one\r\ntwo\r\nthree\nfour\r\n",
        old: "one",
        new: "uno",
        expect: Expect::Lands(b"uno\r\ntwo\r\nthree\nfour\r\n"),
        trap: true,
        ..Case::BASE
    },
    // ------------------------------------------------ aider's editblock tests
    Case {
        name: "aider_missing_varied_leading_ws",
        source: AIDER,
        kind: Kind::Indentation,
        file: b"\n    line1\n    line2\n        line3\n    line4\n",
        old: "line2\n    line3\n",
        new: "new_line2\n    new_line3\n",
        expect: Expect::Lands(b"\n    line1\n    new_line2\n        new_line3\n    line4\n"),
        ..Case::BASE
    },
    Case {
        name: "aider_missing_leading_ws",
        source: AIDER,
        kind: Kind::Indentation,
        file: b"    line1\n    line2\n    line3\n",
        old: "line1\nline2\n",
        new: "new_line1\nnew_line2\n",
        expect: Expect::Lands(b"    new_line1\n    new_line2\n    line3\n"),
        ..Case::BASE
    },
    Case {
        name: "aider_first_of_two",
        source: AIDER,
        kind: Kind::Ambiguous,
        file: b"line1\nline2\nline1\nline3\n",
        old: "line1\n",
        new: "new_line\n",
        trap: true,
        ..Case::BASE
    },
    Case {
        name: "aider_first_of_two_indented",
        source: AIDER,
        kind: Kind::Ambiguous,
        file: b"    line1\n    line2\n    line1\n    line3\n",
        old: "line1\n",
        new: "new_line\n",
        trap: true,
        ..Case::BASE
    },
    Case {
        name: "aider_some_leading_ws",
        source: AIDER,
        kind: Kind::Indentation,
        file: b"    line1\n    line2\n    line3\n",
        old: " line1\n line2\n",
        new: " new_line1\n     new_line2\n",
        expect: Expect::Lands(b"    new_line1\n        new_line2\n    line3\n"),
        ..Case::BASE
    },
    Case {
        name: "aider_blank_then_indented",
        source: AIDER,
        kind: Kind::BlankLines,
        file: b"    line1\n    line2\n    line3\n",
        old: "\n  line1\n  line2\n",
        new: "  new_line1\n  new_line2\n",
        expect: Expect::Lands(b"    new_line1\n    new_line2\n    line3\n"),
        ..Case::BASE
    },
    Case {
        name: "aider_elision",
        source: AIDER_DOTS,
        kind: Kind::Elision,
        file: STORE,
        old: "    def get(self, key):\n        return self.data[key]\n...\n    def drop(self, key):\n        del self.data[key]\n",
        new: "    def get(self, key):\n        return self.data.get(key)\n...\n    def drop(self, key):\n        self.data.pop(key, None)\n",
        expect: Expect::Lands(b"class Store:\n    def get(self, key):\n        return self.data.get(key)\n\n    def put(self, key, value):\n        self.data[key] = value\n\n    def drop(self, key):\n        self.data.pop(key, None)\n"),
        ..Case::BASE
    },
    Case {
        name: "aider_elision_unpaired",
        source: AIDER_DOTS,
        kind: Kind::Elision,
        file: STORE,
        old: "    def get(self, key):\n...\n        del self.data[key]",
        new: "    def get(self, key):\n        pass",
        trap: true,
        ..Case::BASE
    },
    Case {
        name: "python_ellipsis_is_code",
        source: ISSUE37,
        kind: Kind::Literal,
        file: b"class P(Protocol):\n    def f(self) -> int:\n        ...\n    def g(self) -> int:\n        ...\n",
        old: "    def f(self) -> int:\n        ...",
        new: "    def f(self) -> str:\n        ...",
        expect: Expect::Lands(b"class P(Protocol):\n    def f(self) -> str:\n        ...\n    def g(self) -> int:\n        ...\n"),
        trap: true,
        ..Case::BASE
    },
    Case {
        name: "elision_piece_three_times",
        source: AIDER_DOTS,
        kind: Kind::Elision,
        file: b"def a():\n    return x\n\ndef b():\n    return x\n\ndef c():\n    return x\n",
        old: "def b():\n...\n    return x",
        new: "def b():\n...\n    return y",
        trap: true,
        ..Case::BASE
    },
    // ------------------------------------------------ Roo Code's search/replace tests
    Case {
        name: "roo_surrounding_blank",
        source: ROO,
        file: b"\nfunction example() {\n    return 42;\n}\n\n",
        old: "function example() {\n    return 42;\n}",
        new: "function example() {\n    return 43;\n}",
        expect: Expect::Lands(b"\nfunction example() {\n    return 43;\n}\n\n"),
        ..Case::BASE
    },
    Case {
        name: "roo_search_unindented",
        source: ROO,
        kind: Kind::Indentation,
        file: b"    function test() {\n        return true;\n    }\n",
        old: "function test() {\n    return true;\n}",
        new: "function test() {\n    return false;\n}",
        expect: Expect::Lands(b"    function test() {\n        return false;\n    }\n"),
        ..Case::BASE
    },
    Case {
        name: "roo_tabs_one_level_missing",
        source: ROO,
        kind: Kind::Tabs,
        file: b"\tfunction test() {\n\t\treturn true;\n\t}",
        old: "function test() {\n\treturn true;\n}",
        new: "function test() {\n\t// Add comment\n\treturn false;\n}",
        expect: Expect::Lands(b"\tfunction test() {\n\t\t// Add comment\n\t\treturn false;\n\t}"),
        ..Case::BASE
    },
    Case {
        name: "roo_crlf",
        source: ROO,
        kind: Kind::LineEndings,
        file: b"function test() {\r\n    return true;\r\n}\r\n",
        old: "function test() {\n    return true;\n}",
        new: "function test() {\n    return false;\n}",
        expect: Expect::Lands(b"function test() {\r\n    return false;\r\n}\r\n"),
        ..Case::BASE
    },
    Case {
        name: "roo_inconsistent_inner_indent",
        source: ROO,
        kind: Kind::Indentation,
        file: b"class Example {\n    constructor() {\n        this.value = 0;\n        if (true) {\n            this.init();\n        }\n    }\n}",
        old: "    constructor() {\n        this.value = 0;\n        if (true) {\n        this.init();\n        }\n    }",
        new: "    constructor() {\n        this.value = 1;\n        if (true) {\n        this.init();\n        this.validate();\n        }\n    }",
        expect: Expect::Lands(b"class Example {\n    constructor() {\n        this.value = 1;\n        if (true) {\n            this.init();\n            this.validate();\n        }\n    }\n}"),
        trap: true,
        ..Case::BASE
    },
    Case {
        name: "roo_python_exact",
        source: ROO,
        file: b"def example():\n    if condition:\n        do_something()\n        for item in items:\n            process(item)\n    return True",
        old: "    if condition:\n        do_something()\n        for item in items:\n            process(item)",
        new: "    if condition:\n        do_something()\n        while items:\n            item = items.pop()\n            process(item)",
        expect: Expect::Lands(b"def example():\n    if condition:\n        do_something()\n        while items:\n            item = items.pop()\n            process(item)\n    return True"),
        ..Case::BASE
    },
    Case {
        name: "roo_middle_out",
        source: ROO,
        kind: Kind::Ambiguous,
        file: b"function one() {\n    return \"target\";\n}\n\nfunction two() {\n    return \"target\";\n}\n\nfunction three() {\n    return \"target\";\n}\n",
        old: "    return \"target\";",
        new: "    return \"updated\";",
        trap: true,
        ..Case::BASE
    },
    Case {
        name: "roo_fuzzy_ninety",
        source: ROO,
        kind: Kind::Hallucinated,
        file: b"function getData() {\n    const results = fetchData();\n    return results.filter(Boolean);\n}\n",
        old: "function getData() {\n    const result = fetchData();\n    return results.filter(Boolean);\n}",
        new: "function getData() {\n    const data = fetchData();\n    return data.filter(Boolean);\n}",
        trap: true,
        ..Case::BASE
    },
    Case {
        name: "roo_too_different",
        source: ROO,
        kind: Kind::Hallucinated,
        file: b"function processUsers(data) {\n    return data.map(user => user.name);\n}\n",
        old: "function handleItems(items) {\n    return items.map(item => item.username);\n}",
        new: "function processData(data) {\n    return data.map(d => d.value);\n}",
        ..Case::BASE
    },
    Case {
        name: "roo_extra_spaces",
        source: ROO,
        kind: Kind::InnerSpace,
        file: b"function sum(a, b) {\n    return a + b;\n}",
        old: "function   sum(a,   b)    {\n    return    a + b;\n}",
        new: "function sum(a, b) {\n    return a + b + 1;\n}",
        expect: Expect::Lands(b"function sum(a, b) {\n    return a + b + 1;\n}"),
        ..Case::BASE
    },
    Case {
        name: "roo_numbered_delete",
        source: ROO,
        kind: Kind::LineNumbers,
        file: b"line 1\nline to delete\nline 3",
        old: "2 | line to delete",
        new: "",
        expect: Expect::Lands(b"line 1\nline 3"),
        ..Case::BASE
    },
    Case {
        name: "roo_numbered_block",
        source: "RooCodeInc/Roo-Code src/core/diff/strategies/__tests__/multi-search-replace-trailing-newline.spec.ts",
        kind: Kind::LineNumbers,
        file: b"class Example {\n    constructor() {\n        this.value = 0;\n    }\n}",
        old: "1 | class Example {\n2 |     constructor() {\n3 |         this.value = 0;\n4 |     }\n5 | }",
        new: "class Example {\n    constructor() {\n        this.value = 1;\n    }\n}",
        expect: Expect::Lands(b"class Example {\n    constructor() {\n        this.value = 1;\n    }\n}"),
        ..Case::BASE
    },
    Case {
        name: "roo_numbered_crlf",
        source: "RooCodeInc/Roo-Code src/core/diff/strategies/__tests__/multi-search-replace-trailing-newline.spec.ts",
        kind: Kind::LineNumbers,
        file: b"function test() {\r\n    return true;\r\n}\r\n",
        old: "1 | function test() {\n2 |     return true;\n3 | }",
        new: "function test() {\n    return false;\n}",
        expect: Expect::Lands(b"function test() {\r\n    return false;\r\n}\r\n"),
        ..Case::BASE
    },
    Case {
        name: "roo_delete_nested_lines",
        source: ROO,
        file: b"function outer() {\n    if (true) {\n        // Remove this\n        console.log(\"test\");\n        // And this\n    }\n    return true;\n}",
        old: "        // Remove this\n        console.log(\"test\");\n        // And this",
        new: "",
        expect: Expect::Lands(b"function outer() {\n    if (true) {\n    }\n    return true;\n}"),
        ..Case::BASE
    },
    Case {
        name: "roo_delete_comment_line",
        source: ROO,
        file: b"function test() {\n    console.log(\"hello\");\n    // Comment to remove\n    console.log(\"world\");\n}",
        old: "    // Comment to remove",
        new: "",
        expect: Expect::Lands(
            b"function test() {\n    console.log(\"hello\");\n    console.log(\"world\");\n}",
        ),
        ..Case::BASE
    },
    // ------------------------------------------------ Codex's seek_sequence
    Case {
        name: "codex_trailing_ws",
        source: CODEX,
        kind: Kind::Indentation,
        file: b"foo   \nbar\t\t\n",
        old: "foo\nbar",
        new: "foo\nbaz",
        expect: Expect::Lands(b"foo   \nbaz\n"),
        ..Case::BASE
    },
    Case {
        name: "codex_both_sides_ws",
        source: CODEX,
        kind: Kind::Indentation,
        file: b"    foo   \n   bar\t\n",
        old: "foo\nbar",
        new: "foo\nqux",
        expect: Expect::Lands(b"    foo   \n   qux\n"),
        ..Case::BASE
    },
    Case {
        name: "codex_unicode_dashes",
        source: CODEX,
        kind: Kind::Lookalike,
        file: "x = 1  # local import \u{2013} avoids top\u{2011}level dep\n".as_bytes(),
        old: "x = 1  # local import - avoids top-level dep",
        new: "x = 2  # local import - avoids top-level dep",
        expect: Expect::Lands("x = 2  # local import \u{2013} avoids top\u{2011}level dep\n".as_bytes()),
        ..Case::BASE
    },
    Case {
        name: "codex_longer_than_file",
        source: CODEX,
        kind: Kind::Hallucinated,
        file: b"just one line\n",
        old: "too\nmany\nlines",
        new: "x",
        ..Case::BASE
    },
    Case {
        name: "codex_patch_envelope",
        source: CODEX_PATCH,
        kind: Kind::Patch,
        file: b"fn main() {\n    println!(\"hi\");\n}\n",
        old: "*** Begin Patch\n*** Update File: src/main.rs\n@@ fn main() {\n-    println!(\"hi\");\n+    println!(\"hello\");\n*** End Patch",
        new: "",
        expect: Expect::Lands(b"fn main() {\n    println!(\"hello\");\n}\n"),
        ..Case::BASE
    },
    // ------------------------------------------------ Gemini CLI's edit corrector
    Case {
        name: "gemini_overescaped_quotes",
        source: GEMINI,
        kind: Kind::Escaped,
        file: b"This is a test string to find \"me\".\n",
        old: "find \\\"me\\\"",
        new: "replace with \\\"this\\\"",
        expect: Expect::Lands(b"This is a test string to replace with \"this\".\n"),
        ..Case::BASE
    },
    Case {
        name: "gemini_overescaped_backslash",
        source: GEMINI,
        kind: Kind::Escaped,
        file: concat!(r"This is a test string to find \me.", "\n").as_bytes(),
        old: r"find \\me",
        new: "replace with foobar",
        expect: Expect::Lands(b"This is a test string to replace with foobar.\n"),
        ..Case::BASE
    },
    // ------------------------------------------------ users' reports
    Case {
        name: "truncated_line_changed",
        source: "https://github.com/cline/cline/issues/11439",
        kind: Kind::Truncated,
        file: SPHERES,
        old: SPHERES_OLD,
        new: "            g_audioFeatures[0].dominantFreq = live.dominantFreq;\n        }\n\n        // Build tree spheres from the smoothed features",
        trap: true,
        ..Case::BASE
    },
    Case {
        name: "truncated_line_restated",
        source: "https://github.com/cline/cline/issues/11439",
        kind: Kind::Truncated,
        file: SPHERES,
        old: SPHERES_OLD,
        new: "            g_audioFeatures[0].dominantFreq = live.dominantFreq;\n            g_audioFeatures[0].energy = live.energy;\n        }\n\n        // Build tree spheres",
        expect: Expect::Lands(b"            g_audioFeatures[0].dominantFreq = live.dominantFreq;\n            g_audioFeatures[0].energy = live.energy;\n        }\n\n        // Build tree spheres with CONTINUOUS time + live audio (no jerk)\n        buildSpheres(t);\n"),
        ..Case::BASE
    },
    Case {
        name: "truncated_use_line",
        source: ISSUE37,
        kind: Kind::Truncated,
        file: b"use std::sync::Arc;\nuse std::thread;\n\nfn main() {}\n",
        old: "use std::threa",
        new: "use log::info;",
        trap: true,
        ..Case::BASE
    },
    Case {
        name: "makefile_tabs",
        source: "https://github.com/anthropics/claude-code/issues/9163",
        kind: Kind::Tabs,
        file: b"build:\n\tgo build ./...\n\ntest:\n\tgo test ./...\n",
        old: "build:\n    go build ./...",
        new: "build:\n    go vet ./...\n    go build ./...",
        expect: Expect::Lands(b"build:\n\tgo vet ./...\n\tgo build ./...\n\ntest:\n\tgo test ./...\n"),
        trap: true,
        ..Case::BASE
    },
    Case {
        name: "go_tabs",
        source: ISSUE37,
        kind: Kind::Tabs,
        file: b"func main() {\n\tif err := run(); err != nil {\n\t\tlog.Fatal(err)\n\t}\n}\n",
        old: "    if err := run(); err != nil {\n        log.Fatal(err)\n    }",
        new: "    if err := run(); err != nil {\n        log.Printf(\"run: %v\", err)\n        os.Exit(1)\n    }",
        expect: Expect::Lands(b"func main() {\n\tif err := run(); err != nil {\n\t\tlog.Printf(\"run: %v\", err)\n\t\tos.Exit(1)\n\t}\n}\n"),
        trap: true,
        ..Case::BASE
    },
    Case {
        name: "new_text_already_indented",
        source: ISSUE37,
        kind: Kind::Indentation,
        file: b"class A:\n    def f(self):\n        x = 1\n        return x\n",
        old: "x = 1\nreturn x",
        new: "        x = 2\n        return x",
        expect: Expect::Lands(b"class A:\n    def f(self):\n        x = 2\n        return x\n"),
        trap: true,
        ..Case::BASE
    },
    Case {
        name: "jsx_tabs",
        source: "https://github.com/anthropics/claude-code/issues/37403",
        kind: Kind::Tabs,
        file: b"\t\t\t<PageTransition>\n\t\t\t\t<div\n\t\t\t\t\taria-live=\"polite\"\n\t\t\t\t\tclassName=\"page\"\n\t\t\t\t>\n",
        old: "            <PageTransition>\n                <div\n                    aria-live=\"polite\"",
        new: "            <PageTransition>\n                <div\n                    aria-live=\"polite\"\n                    role=\"status\"",
        expect: Expect::Lands(b"\t\t\t<PageTransition>\n\t\t\t\t<div\n\t\t\t\t\taria-live=\"polite\"\n\t\t\t\t\trole=\"status\"\n\t\t\t\t\tclassName=\"page\"\n\t\t\t\t>\n"),
        ..Case::BASE
    },
    Case {
        name: "c_tabs",
        source: "https://github.com/aws/amazon-q-developer-cli/issues/3401",
        kind: Kind::Tabs,
        file: b"static int probe(struct device *dev)\n{\n\tint ret;\n\n\tret = setup(dev);\n\tif (ret)\n\t\treturn ret;\n\treturn 0;\n}\n",
        old: "    ret = setup(dev);\n    if (ret)\n        return ret;",
        new: "    ret = setup(dev);\n    if (ret) {\n        dev_err(dev, \"setup failed\\n\");\n        return ret;\n    }",
        expect: Expect::Lands(b"static int probe(struct device *dev)\n{\n\tint ret;\n\n\tret = setup(dev);\n\tif (ret) {\n\t\tdev_err(dev, \"setup failed\\n\");\n\t\treturn ret;\n\t}\n\treturn 0;\n}\n"),
        ..Case::BASE
    },
    Case {
        name: "comment_space_added",
        source: "https://github.com/QwenLM/qwen-code/pull/3061",
        kind: Kind::InnerSpace,
        file: "func main() {\n\t//处理根路径\n\thttp.HandleFunc(\"/\", func(w http.ResponseWriter, r *http.Request) {\n\t\tif r.URL.Path != \"/\" {\n\t\t\thttp.NotFound(w, r)\n\t\t\treturn\n\t\t}\n".as_bytes(),
        old: "\t// 处理根路径\n\thttp.HandleFunc(\"/\", func(w http.ResponseWriter, r *http.Request) {",
        new: "\t// 处理根路径\n\thttp.HandleFunc(\"/\", func(w http.ResponseWriter, r *http.Request) {\n\t\tlog.Printf(\"%s %s\", r.Method, r.URL.Path)",
        expect: Expect::Lands("func main() {\n\t//处理根路径\n\thttp.HandleFunc(\"/\", func(w http.ResponseWriter, r *http.Request) {\n\t\tlog.Printf(\"%s %s\", r.Method, r.URL.Path)\n\t\tif r.URL.Path != \"/\" {\n\t\t\thttp.NotFound(w, r)\n\t\t\treturn\n\t\t}\n".as_bytes()),
        ..Case::BASE
    },
    Case {
        name: "curly_quotes_changed_line",
        source: "https://github.com/github/copilot-cli/issues/3254",
        kind: Kind::Lookalike,
        file: "Please do not re-examine \u{201c}what repo to change\u{201d} each time.\n".as_bytes(),
        old: "Please do not re-examine \"what repo to change\" each time.",
        new: "Please do not re-examine \"what repo to change\" each session.",
        expect: Expect::Lands("Please do not re-examine \u{201c}what repo to change\u{201d} each session.\n".as_bytes()),
        ..Case::BASE
    },
    Case {
        name: "curly_apostrophe",
        source: "https://github.com/anthropics/claude-code/issues/1986",
        kind: Kind::Lookalike,
        file: "It\u{2019}s a long way to go.\nWe\u{2019}ll see.\n".as_bytes(),
        old: "It's a long way to go.",
        new: "It's a long way to Tipperary.",
        expect: Expect::Lands("It\u{2019}s a long way to Tipperary.\nWe\u{2019}ll see.\n".as_bytes()),
        ..Case::BASE
    },
    Case {
        name: "no_break_space",
        source: "https://github.com/anthropics/claude-code/issues/29869",
        kind: Kind::Lookalike,
        file: "- [ ] Update the task list in\u{a0}current sprint\n- [ ] Ship it\n".as_bytes(),
        old: "- [ ] Update the task list in current sprint",
        new: "- [x] Update the task list in current sprint",
        expect: Expect::Lands("- [x] Update the task list in\u{a0}current sprint\n- [ ] Ship it\n".as_bytes()),
        ..Case::BASE
    },
    Case {
        name: "css_noncontiguous",
        source: "https://github.com/anomalyco/opencode/issues/24742",
        kind: Kind::Hallucinated,
        file: b".btn:focus-visible {\n  outline: 2px solid var(--ring);\n  outline-offset: 3px;\n}\n\n.card {\n  padding: 1rem;\n}\n\n/* ================================================================\n   27. MOBILE TOUCH FEEDBACK\n   ================================================================ */\n.tap { opacity: .8; }\n",
        old: "  outline-offset: 3px;\n}\n\n/* ================================================================\n   27. MOBILE TOUCH FEEDBACK",
        new: "  outline-offset: 2px;",
        trap: true,
        ..Case::BASE
    },
    Case {
        name: "weak_anchor_brace",
        source: "https://github.com/anomalyco/opencode/issues/14046",
        kind: Kind::Hallucinated,
        file: b"class DatabaseConnection {\n  private pool: ConnectionPool\n\n  constructor(config: DbConfig) {\n    this.pool = new ConnectionPool(config)\n  }\n\n  async query(sql: string, params: unknown[]) {\n    const conn = await this.pool.acquire()\n    try {\n      const result = await conn.execute(sql, params)\n      return result.rows\n    } finally {\n      this.pool.release(conn)\n    }\n  }\n}\n",
        old: "  async query(sql: string, params: unknown[]) {\n    const cached = this.cache.get(sql)\n    if (cached) return cached\n  }",
        new: "  async query(sql: string, params: unknown[]) {\n    return this.cachedQuery(sql, params)\n  }",
        trap: true,
        ..Case::BASE
    },
    Case {
        name: "two_lines_trailing_newline",
        source: "https://github.com/anomalyco/opencode/issues/14632",
        kind: Kind::Hallucinated,
        file: b"function foo() {\n  a();\n}\n\nfunction bar() {\n  b();\n}\n",
        old: "function foo() {\n}\n",
        new: "function foo() {\n  c();\n}\n",
        trap: true,
        ..Case::BASE
    },
    Case {
        name: "user_inserted_line",
        source: "https://github.com/anomalyco/opencode/issues/29726",
        kind: Kind::Stale,
        file: b"def handler(event):\n    validate(event)\n    # keep: audit trail required by compliance\n    audit(event)\n    return process(event)\n",
        old: "def handler(event):\n    validate(event)\n    audit(event)\n    return process(event)",
        new: "def handler(event):\n    validate(event)\n    return process(event)",
        trap: true,
        ..Case::BASE
    },
    Case {
        name: "main_layout_twice",
        source: "https://github.com/anomalyco/opencode/issues/1261",
        kind: Kind::Ambiguous,
        file: b"func (a appModel) View() string {\n    mainLayout := a.layout()\n    if a.showHelp {\n        mainLayout = a.help(mainLayout)\n    }\n\n    return mainLayout\n}\n\nfunc (a appModel) Compact() string {\n    mainLayout := a.compact()\n    if a.showDiff {\n        mainLayout = a.diff(mainLayout)\n    }\n\n    return mainLayout\n}\n",
        old: "    }\n\n    return mainLayout",
        new: "    }\n\n    // Add minimap overlay\n    if a.minimap.IsVisible() {\n        mainLayout = a.overlay(mainLayout)\n    }\n\n    return mainLayout",
        trap: true,
        ..Case::BASE
    },
    Case {
        name: "go_interior_drift",
        source: "https://github.com/Gitlawb/zero/issues/963",
        kind: Kind::Stale,
        file: b"func a() {\n\tx := 1\n\ty := 2\n\tz := 3\n\treturn\n}\n",
        old: "func a() {\n\tx := 1\n\ty := 99\n\tz := 3\n\treturn\n}",
        new: "func a() {\n\tx := 1\n\ty := 99\n\tz := 4\n\treturn\n}",
        trap: true,
        ..Case::BASE
    },
    Case {
        name: "stale_second_edit",
        source: "https://github.com/can1357/oh-my-pi/issues/10454",
        kind: Kind::Stale,
        file: b"const handleExport = async () => {\n  const rows = await fetchRows(filters)\n  downloadCsv(rows)\n}\n\nconst handleExportExcel = async () => {\n  const rows = await fetchRows(filters)\n  downloadXlsx(rows, { sheet: 'Report' })\n}\n",
        old: "const handleExportExcel = async () => {\n  const data = await loadRows()\n  downloadXlsx(data)\n}",
        new: "const handleExportExcel = async () => {\n  const data = await loadRows()\n  downloadXlsx(data, { sheet: 'Data' })\n}",
        trap: true,
        ..Case::BASE
    },
    Case {
        name: "already_applied_pub",
        source: "https://github.com/Aider-AI/aider/issues/827",
        kind: Kind::AlreadyApplied,
        file: b"pub struct Shards {\n    len: u32,\n    arr_offset: u64,\n}\n\nimpl Shards {\n    pub fn init(&mut self, all: &mut Allocator, shard_len: u32, max_len: u64) -> io::Result<()> {\n        let size = shard_len as u64;\n        Ok(())\n    }\n}\n",
        old: "struct Shards {\n    len: u32,\n    arr_offset: u64,\n}\n\nimpl Shards {\n    fn init(&mut self, all: &mut Allocator, shard_len: u32, max_len: u64) -> io::Result<()> {",
        new: "pub struct Shards {\n    len: u32,\n    arr_offset: u64,\n}\n\nimpl Shards {\n    pub fn init(&mut self, all: &mut Allocator, shard_len: u32, max_len: u64) -> io::Result<()> {",
        expect: Expect::Same,
        ..Case::BASE
    },
    Case {
        name: "retried_insertion",
        source: ISSUE37,
        kind: Kind::AlreadyApplied,
        file: b"fn main() {\n    init();\n    run();\n}\n",
        old: "fn main() {",
        new: "fn main() {\n    init();",
        expect: Expect::Same,
        trap: true,
        ..Case::BASE
    },
    Case {
        name: "lfm2_double_escaped",
        source: "https://github.com/ggml-org/llama.cpp/pull/24667",
        kind: Kind::Escaped,
        file: b"print('hello')\nprint('world')\n",
        old: "print('hello')\\nprint('world')",
        new: "print('hello')\\nprint('there')",
        expect: Expect::Lands(b"print('hello')\nprint('there')\n"),
        ..Case::BASE
    },
    Case {
        name: "literal_newlines_in_markdown",
        source: "https://github.com/openclaw/openclaw/pull/14634",
        kind: Kind::Escaped,
        file: b"# Title\n\nSome text.\n",
        old: "# Title\\n\\nSome text.",
        new: "# Title\\n\\nOther text.",
        expect: Expect::Lands(b"# Title\n\nOther text.\n"),
        ..Case::BASE
    },
    Case {
        name: "literal_u0000",
        source: "https://github.com/anthropics/claude-code/issues/66058",
        kind: Kind::Literal,
        file: b"const NUL = \"\\u0000\";\n",
        old: "const NUL = \"\\u0000\";",
        new: "const NUL = \"\\u0000\"; // sentinel",
        expect: Expect::Lands(b"const NUL = \"\\u0000\"; // sentinel\n"),
        trap: true,
        ..Case::BASE
    },
    Case {
        name: "printf_literal_newline",
        source: ISSUE37,
        kind: Kind::Literal,
        file: b"int main(void) {\n    printf(\"a\\n\");\n}\n",
        old: "printf(\"a\\n\");",
        new: "printf(\"b\\n\");",
        expect: Expect::Lands(b"int main(void) {\n    printf(\"b\\n\");\n}\n"),
        trap: true,
        ..Case::BASE
    },
    Case {
        name: "overescaped_backticks",
        source: "https://github.com/letta-ai/letta-code/pull/962",
        kind: Kind::Escaped,
        file: b"const s = `a`;\n",
        old: "const s = \\`a\\`;",
        new: "const s = \\`b\\`;",
        expect: Expect::Lands(b"const s = `b`;\n"),
        ..Case::BASE
    },
    Case {
        name: "read_prefix_colon",
        source: "https://github.com/xal-sh/xal/pull/42",
        kind: Kind::LineNumbers,
        file: b"alpha\nbeta\ngamma\n",
        old: "     2: beta\n     3: gamma",
        new: "     2: beta\n     3: delta",
        expect: Expect::Lands(b"alpha\nbeta\ndelta\n"),
        ..Case::BASE
    },
    Case {
        name: "prefix_looking_content",
        source: "https://github.com/xal-sh/xal/pull/42",
        kind: Kind::Literal,
        file: b"1: one\n2: two\n3: three\n",
        old: "2: two",
        new: "2: deux",
        expect: Expect::Lands(b"1: one\n2: deux\n3: three\n"),
        trap: true,
        ..Case::BASE
    },
    Case {
        name: "cat_n_tab_prefix",
        source: "https://github.com/anomalyco/opencode/pull/2884",
        kind: Kind::LineNumbers,
        file: b"import os\nimport sys\n\nprint(os.getcwd())\n",
        old: "1\timport os\n2\timport sys",
        new: "1\timport os\n2\timport sys\n3\timport json",
        expect: Expect::Lands(b"import os\nimport sys\nimport json\n\nprint(os.getcwd())\n"),
        ..Case::BASE
    },
    Case {
        name: "arrow_prefix_tabs",
        source: "https://github.com/anthropics/claude-code/issues/37403",
        kind: Kind::LineNumbers,
        file: b"\t\t\t<PageTransition>\n\t\t\t\t<div\n\t\t\t\t\taria-live=\"polite\"\n",
        old: "   248\u{2192}\t\t\t<PageTransition>\n   249\u{2192}\t\t\t\t<div",
        new: "   248\u{2192}\t\t\t<PageTransition>\n   249\u{2192}\t\t\t\t<section",
        expect: Expect::Lands(b"\t\t\t<PageTransition>\n\t\t\t\t<section\n\t\t\t\t\taria-live=\"polite\"\n"),
        ..Case::BASE
    },
    Case {
        name: "dart_duplicate_import",
        source: "https://github.com/anomalyco/opencode/issues/15515",
        kind: Kind::Ambiguous,
        file: DART,
        old: "import 'dart:io';",
        new: "",
        trap: true,
        ..Case::BASE
    },
    Case {
        name: "dart_duplicate_numbered",
        source: "https://github.com/anomalyco/opencode/issues/15515",
        kind: Kind::LineNumbers,
        file: DART,
        old: "4: import 'dart:io';",
        new: "",
        expect: Expect::Lands(
            b"import 'dart:async';\nimport 'dart:convert';\nimport 'dart:io';\n\nclass VaultProvider {}\n",
        ),
        ..Case::BASE
    },
    Case {
        name: "css_numbered_brace",
        source: "https://github.com/RooCodeInc/Roo-Code/issues/2657",
        kind: Kind::LineNumbers,
        file: b".board {\n  display: grid;\n}\n.cell {\n  border: 1px solid;\n}\n.footer {\n  margin: 0;\n}\n",
        old: "6 | }",
        new: "6 | }\n0 | .piece {\n0 |     will-change: transform;\n0 | }",
        expect: Expect::Lands(b".board {\n  display: grid;\n}\n.cell {\n  border: 1px solid;\n}\n.piece {\n    will-change: transform;\n}\n.footer {\n  margin: 0;\n}\n"),
        ..Case::BASE
    },
    Case {
        name: "numbered_new_text",
        source: "https://github.com/Zoo-Code-Org/Zoo-Code/issues/910",
        kind: Kind::LineNumbers,
        file: b"## Checklist\n\n- [ ] maps parsed\n- [ ] maps done\n- [ ] tiles done\n",
        old: "4 | - [ ] maps done",
        new: "4 | - [x] maps done",
        expect: Expect::Lands(b"## Checklist\n\n- [ ] maps parsed\n- [x] maps done\n- [ ] tiles done\n"),
        trap: true,
        ..Case::BASE
    },
    Case {
        name: "bare_hunk",
        source: "https://github.com/gamedevpl/www.gamedev.pl/pull/581",
        kind: Kind::Patch,
        file: b"def f():\n    return 1\n\ndef g():\n    return 1\n",
        old: "@@\n def f():\n-    return 1\n+    return 2",
        new: "",
        expect: Expect::Lands(b"def f():\n    return 2\n\ndef g():\n    return 1\n"),
        ..Case::BASE
    },
    Case {
        name: "unified_with_headers",
        source: "https://github.com/Aider-AI/aider/pull/403",
        kind: Kind::Patch,
        file: b"import os\nDEBUG = True\nPORT = 8080\n",
        old: "--- a/app.py\n+++ b/app.py\n@@ -1,3 +1,3 @@\n import os\n-DEBUG = True\n+DEBUG = False\n PORT = 8080\n",
        new: "--- a/app.py\n+++ b/app.py\n@@ -1,3 +1,3 @@\n import os\n-DEBUG = True\n+DEBUG = False\n PORT = 8080\n",
        expect: Expect::Lands(b"import os\nDEBUG = False\nPORT = 8080\n"),
        ..Case::BASE
    },
    Case {
        name: "hunk_wrong_counts",
        source: "https://github.com/gamedevpl/www.gamedev.pl/pull/581",
        kind: Kind::Patch,
        file: b"a = 1\nb = 2\nc = 3\n",
        old: "@@ -10,2 +10,9 @@\n a = 1\n-b = 2\n+b = 20",
        new: "",
        expect: Expect::Lands(b"a = 1\nb = 20\nc = 3\n"),
        ..Case::BASE
    },
    Case {
        name: "search_replace_in_old",
        source: "https://github.com/stippi/code-assistant/pull/45",
        kind: Kind::Patch,
        file: b"x = 1\ny = 2\n",
        old: "<<<<<<< SEARCH\nx = 1\n=======\nx = 10\n>>>>>>> REPLACE",
        new: "",
        expect: Expect::Lands(b"x = 10\ny = 2\n"),
        ..Case::BASE
    },
    Case {
        name: "search_replace_split",
        source: "https://github.com/cline/cline/issues/4216",
        kind: Kind::Patch,
        file: b"x = 1\ny = 2\n",
        old: "<<<<<<< SEARCH\nx = 1\n=======",
        new: "x = 10\n>>>>>>> REPLACE",
        expect: Expect::Lands(b"x = 10\ny = 2\n"),
        ..Case::BASE
    },
    Case {
        name: "stray_separator",
        source: "https://github.com/ondysss/codepilot1c-edt/pull/73",
        kind: Kind::Patch,
        file: b"x = 1\ny = 2\n",
        old: "<<<<<<< SEARCH\nx = 1\n=======\nx = 10\n=======\ny = 20\n>>>>>>> REPLACE",
        new: "",
        trap: true,
        ..Case::BASE
    },
    Case {
        name: "minus_plus_lines",
        source: "https://github.com/kawaiipantsu/boop/issues/28",
        kind: Kind::Patch,
        file: SERVER,
        old: "-    timeout = 30\n+    timeout = 60",
        new: "",
        expect: Expect::Lands(SERVER_60),
        ..Case::BASE
    },
    Case {
        name: "minus_old_plus_new",
        source: "https://github.com/kawaiipantsu/boop/issues/28",
        kind: Kind::Patch,
        file: SERVER,
        old: "-    timeout = 30",
        new: "+    timeout = 60",
        expect: Expect::Lands(SERVER_60),
        ..Case::BASE
    },
    Case {
        name: "markdown_list_literal",
        source: ISSUE37,
        kind: Kind::Literal,
        file: b"- apples\n- pears\n",
        old: "- apples\n- pears",
        new: "- apples\n- plums",
        expect: Expect::Lands(b"- apples\n- plums\n"),
        trap: true,
        ..Case::BASE
    },
    Case {
        name: "duplicated_test_bodies",
        source: "https://github.com/aaif-goose/goose/issues/2830",
        kind: Kind::Ambiguous,
        file: b"#[test]\nfn parses_a() {\n    let v = parse(\"a\");\n    assert_eq!(v.len(), 1);\n}\n\n#[test]\nfn parses_b() {\n    let v = parse(\"a\");\n    assert_eq!(v.len(), 1);\n}\n",
        old: "    let v = parse(\"a\");\n    assert_eq!(v.len(), 1);",
        new: "    let v = parse(\"b\");\n    assert_eq!(v.len(), 1);",
        trap: true,
        ..Case::BASE
    },
    Case {
        name: "empty_old_replace_all",
        source: "https://github.com/thClaws/thClaws/pull/121",
        kind: Kind::EmptyOld,
        file: b"abc\n",
        old: "",
        new: "X",
        all: true,
        trap: true,
        ..Case::BASE
    },
    Case {
        name: "empty_old_whole_file",
        source: "https://github.com/Nomadcxx/opencode-cursor/pull/70",
        kind: Kind::EmptyOld,
        file: b"source 'https://rubygems.org'\ngem 'rails'\n",
        old: "",
        new: "gem 'sinatra'\n",
        trap: true,
        ..Case::BASE
    },
    Case {
        name: "paragraphs_kept_apart",
        source: "https://github.com/Gitlawb/openclaude/pull/1561",
        kind: Kind::BlankLines,
        file: b"A paragraph.\n\nNext paragraph.\n",
        old: "A paragraph.\nNext paragraph.",
        new: "A paragraph.\nNext paragraph, edited.",
        expect: Expect::Lands(b"A paragraph.\n\nNext paragraph, edited.\n"),
        trap: true,
        ..Case::BASE
    },
    Case {
        name: "pep8_two_blank_lines",
        source: "https://github.com/esengine/DeepSeek-Reasonix/pull/10246",
        kind: Kind::BlankLines,
        file: b"import os\n\n\ndef a():\n    return 1\n\n\ndef b():\n    return 2\n",
        old: "def a():\n    return 1\n\ndef b():\n    return 2",
        new: "def a():\n    return 10\n\ndef b():\n    return 2",
        expect: Expect::Lands(b"import os\n\n\ndef a():\n    return 10\n\n\ndef b():\n    return 2\n"),
        ..Case::BASE
    },
    Case {
        name: "inner_space_run",
        source: "https://github.com/earendil-works/pi/issues/7836",
        kind: Kind::InnerSpace,
        file: b"    x    = compute(a,  b)\n",
        old: "x = compute(a, b)",
        new: "x = compute(a, c)",
        expect: Expect::Lands(b"    x = compute(a, c)\n"),
        ..Case::BASE
    },
    Case {
        name: "go_struct_tabs",
        source: "https://github.com/charmbracelet/crush/pull/3452",
        kind: Kind::Tabs,
        file: b"type Config struct {\n\tName string\n\tPort int\n}\n",
        old: "type Config struct {\n    Name string\n    Port int\n}",
        new: "type Config struct {\n    Name string\n    Port int\n    Debug bool\n}",
        expect: Expect::Lands(b"type Config struct {\n\tName string\n\tPort int\n\tDebug bool\n}\n"),
        ..Case::BASE
    },
    Case {
        name: "dollars_replace_all",
        source: "https://github.com/fersilva16/nix-config/pull/637",
        kind: Kind::Literal,
        file: b"run:\n\techo $$PPID\n\nstop:\n\tkill $$PPID\n",
        old: "$$PPID",
        new: "$$PID",
        all: true,
        expect: Expect::Lands(b"run:\n\techo $$PID\n\nstop:\n\tkill $$PID\n"),
        trap: true,
    },
    Case {
        name: "latex_dollars",
        source: "https://github.com/LionSR/TeXRA/pull/6872",
        kind: Kind::Literal,
        file: b"The mass is $m$ and the energy $E$.\n",
        old: "the energy $E$",
        new: "the energy $E = mc^2$ ($&$ literal)",
        expect: Expect::Lands(b"The mass is $m$ and the energy $E = mc^2$ ($&$ literal).\n"),
        trap: true,
        ..Case::BASE
    },
    Case {
        name: "latin1_edit",
        source: ISSUE41,
        kind: Kind::Encoding,
        file: b"caf\xe9 = 1\nna\xefve = 2\n",
        old: "na\u{ef}ve = 2",
        new: "na\u{ef}ve = 3",
        expect: Expect::Lands(b"caf\xe9 = 1\nna\xefve = 3\n"),
        ..Case::BASE
    },
    Case {
        name: "cp1252_quotes",
        source: ISSUE41,
        kind: Kind::Encoding,
        file: b"say \x93hi\x94\n",
        old: "say \u{201c}hi\u{201d}",
        new: "say \u{201c}hello\u{201d}",
        expect: Expect::Lands(b"say \x93hello\x94\n"),
        ..Case::BASE
    },
    Case {
        name: "latin1_cannot_hold",
        source: ISSUE41,
        kind: Kind::Encoding,
        file: b"caf\xe9\n",
        old: "caf\u{e9}",
        new: "caf\u{e9} \u{4e2d}",
        trap: true,
        ..Case::BASE
    },
    Case {
        name: "utf16_edit",
        source: ISSUE41,
        kind: Kind::Encoding,
        file: b"\xff\xfea\x00 \x00=\x00 \x001\x00\r\x00\n\x00",
        old: "a = 1",
        new: "a = 2",
        expect: Expect::Lands(b"\xff\xfea\x00 \x00=\x00 \x002\x00\r\x00\n\x00"),
        ..Case::BASE
    },
    Case {
        name: "binary_refused",
        source: ISSUE41,
        kind: Kind::Encoding,
        file: b"\x7fELF\x02\x01\x01\x00\x00",
        old: "ELF",
        new: "FLE",
        trap: true,
        ..Case::BASE
    },
    Case {
        name: "misremembered_signature",
        source: "https://github.com/moonbitlang/openseek/pull/243",
        kind: Kind::Hallucinated,
        file: b"fn parse(input : String) -> Int {\n  input.length()\n}\n",
        old: "fn parse(input: &str) -> i32 {\n  input.len()\n}",
        new: "fn parse(input: &str) -> usize {\n  input.len()\n}",
        ..Case::BASE
    },
    Case {
        name: "entity_differs",
        source: "https://github.com/RooCodeInc/Roo-Code/issues/4077",
        kind: Kind::Hallucinated,
        file: b"// Read the value &amp; validate it\nlet v = read();\n",
        old: "// Read the value & validate it\nlet v = read();",
        new: "// Read the value & validate it\nlet v = read()?;",
        trap: true,
        ..Case::BASE
    },
    Case {
        name: "remembered_version",
        source: "https://github.com/google-gemini/gemini-cli/issues/5251",
        kind: Kind::Stale,
        file: b"<button class=\"trim\" onclick=\"trim()\">Trim</button>\n<button class=\"save\">Save</button>\n",
        old: "<button class=\"trim\">Trim</button>\n<button class=\"save\">Save</button>",
        new: "<button class=\"trim\" disabled>Trim</button>\n<button class=\"save\">Save</button>",
        trap: true,
        ..Case::BASE
    },
    Case {
        name: "partial_line_attribute",
        source: "https://github.com/Aider-AI/aider/issues/1294",
        file: b"<input type=\"checkbox\" id=\"enabled-@queue.Key\" for=\"enabled-@queue.Key\" checked=\"@queue.Enabled\" />\n",
        old: "for=\"enabled-@queue.Key\"",
        new: "for=\"enabled-@queue.Queue.Key\"",
        expect: Expect::Lands(b"<input type=\"checkbox\" id=\"enabled-@queue.Key\" for=\"enabled-@queue.Queue.Key\" checked=\"@queue.Enabled\" />\n"),
        ..Case::BASE
    },
    Case {
        name: "partial_first_line",
        source: "https://github.com/Aider-AI/aider/issues/1294",
        file: b"let v = foo(\n    a,\n);\n",
        old: "foo(\n    a,",
        new: "bar(\n    a,",
        expect: Expect::Lands(b"let v = bar(\n    a,\n);\n"),
        ..Case::BASE
    },
    Case {
        name: "number_cut_short",
        source: ISSUE37,
        kind: Kind::Truncated,
        file: b"timeout = 10\nretries = 3\n",
        old: "timeout = 1",
        new: "timeout = 2",
        trap: true,
        ..Case::BASE
    },
    Case {
        name: "crlf_replace_all",
        source: "https://github.com/earendil-works/pi/issues/355",
        kind: Kind::LineEndings,
        file: b"alpha\r\nbeta\r\ngamma\r\nalpha\r\nbeta\r\n",
        old: "alpha\nbeta",
        new: "ALPHA\nBETA",
        all: true,
        expect: Expect::Lands(b"ALPHA\r\nBETA\r\ngamma\r\nALPHA\r\nBETA\r\n"),
        ..Case::BASE
    },
    Case {
        name: "crlf_tabs_cpp",
        source: "https://github.com/anthropics/claude-code/issues/28831",
        kind: Kind::LineEndings,
        file: b"\t\tFILE* fp = fopen(filename.c_str(), \"rb\");\r\n\t\tif (!fp) {\r\n\t\t\tthrow std::runtime_error(\"could not open\");\r\n\t\t}\r\n",
        old: "\t\tFILE* fp = fopen(filename.c_str(), \"rb\");\n\t\tif (!fp) {",
        new: "\t\tFILE* fp = fopen(filename.c_str(), \"rb\");\n\t\tif (fp == nullptr) {",
        expect: Expect::Lands(b"\t\tFILE* fp = fopen(filename.c_str(), \"rb\");\r\n\t\tif (fp == nullptr) {\r\n\t\t\tthrow std::runtime_error(\"could not open\");\r\n\t\t}\r\n"),
        ..Case::BASE
    },
    Case {
        name: "delete_across_blank_line",
        source: "https://github.com/esengine/DeepSeek-Reasonix/pull/10246",
        kind: Kind::BlankLines,
        file: b"a()\n\nb()\nc()\n",
        old: "a()\nb()",
        new: "",
        expect: Expect::Lands(b"c()\n"),
        ..Case::BASE
    },
    Case {
        name: "already_applied_one_line",
        source: "https://github.com/Aider-AI/aider/issues/827",
        kind: Kind::AlreadyApplied,
        file: b"MAX_RETRIES = 5\nTIMEOUT = 30\n",
        old: "MAX_RETRIES = 3",
        new: "MAX_RETRIES = 5",
        expect: Expect::Same,
        ..Case::BASE
    },
    Case {
        name: "curly_quotes_in_old_text",
        source: "https://github.com/PrimeIntellect-ai/prime-agent/issues/654",
        kind: Kind::Lookalike,
        file: "na\u{ef}ve \u{2014} caf\u{e9}\u{b2}\nconsole.log('x')\n".as_bytes(),
        old: "console.log(\u{2018}x\u{2019})",
        new: "console.log('y')",
        expect: Expect::Lands("na\u{ef}ve \u{2014} caf\u{e9}\u{b2}\nconsole.log('y')\n".as_bytes()),
        trap: true,
        ..Case::BASE
    },
    Case {
        name: "trailing_spaces_elsewhere_kept",
        source: "https://github.com/earendil-works/pi/pull/5898",
        kind: Kind::Indentation,
        file: b"untouched   \nreplace me   \nafter\ntrailing   \n",
        old: "replace me\nafter",
        new: "DONE\nDONE2",
        expect: Expect::Lands(b"untouched   \nDONE\nDONE2\ntrailing   \n"),
        trap: true,
        ..Case::BASE
    },
    Case {
        name: "table_row_context_without_links",
        source: "https://github.com/NousResearch/hermes-agent/issues/93698",
        kind: Kind::Hallucinated,
        file: b"| task | source |\n|---|---|\n| parse | [spec](docs/spec.md) |\n| render | [notes](docs/render.md) |\n",
        old: "| parse | spec |\n| render | notes |",
        new: "| parse | spec |\n| render | notes (done) |",
        trap: true,
        ..Case::BASE
    },
    Case {
        name: "python_block_it_is_not_in",
        source: ISSUE37,
        kind: Kind::Indentation,
        file: b"def f(a):\n    if a:\n        b()\n        c()\n    return a\n",
        old: "if a:\n    b()\nc()",
        new: "if a:\n    b()\nc()\nd()",
        trap: true,
        ..Case::BASE
    },
];
