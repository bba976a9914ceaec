//! The fuzz driver (bench/fuzz.sh): runs the targets of mm-testkit's fuzz.rs — the ACP line
//! reader, the SSE parser and stream accumulator, the text tool-call parser, the session-file
//! loader, the configuration loader, skill front matter — on random and mutated inputs for a
//! given time, and prints the inputs tried, the crashes and the peak RSS.
//!
//!     fuzz [--seconds N] [--workers W] [--seed S] [--out DIR] [--hang-seconds H] [--only TARGET]
//!
//! `--only` runs one target (`text-calls`, …) for all the time.
//!
//! Each worker is a process of its own (this program with `--worker`), so that a crash that
//! kills the process (a stack overflow, an abort) is counted too: the worker writes the input it
//! was running to `DIR` from its SIGABRT handler, and the parent starts a new worker for the time
//! left. A panic (a target's check failed, or the parser panicked) is caught in the worker, its
//! input and message written to `DIR`, and fuzzing goes on. Every allocation is counted: a target
//! that allocates beyond its bound panics (mm-testkit's fuzz.rs). A worker that reports no
//! progress for `--hang-seconds` (default 10; a round of every target takes milliseconds) is
//! hung: the parent sends it SIGABRT, so its input is written like an abort's, and counts it.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::print_stdout,
    clippy::disallowed_methods
)]

use mm_testkit::fuzz;

use std::ffi::CString;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicPtr, AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock, mpsc};
use std::time::{Duration, Instant};

#[global_allocator]
static ALLOCATOR: fuzz::Counting = fuzz::Counting;

// ------------------------------------------------------------------ random numbers

/// splitmix64: small, fast, and reproducible from one seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next() % n as u64) as usize
        }
    }

    fn chance(&mut self, one_in: usize) -> bool {
        self.below(one_in) == 0
    }
}

// ------------------------------------------------------------------ inputs

/// Seeds and dictionary tokens of a target.
struct Corpus {
    seeds: Vec<Vec<u8>>,
    tokens: Vec<&'static [u8]>,
}

fn corpus(target: &str) -> Corpus {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let s = |t: &str| t.as_bytes().to_vec();
    match target {
        "acp-lines" => Corpus {
            seeds: vec![
                s(
                    "\x10\x07{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":1}}\n{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"session/new\",\"params\":{\"cwd\":\"/tmp\",\"mcpServers\":[]}}\n",
                ),
                s(
                    "\x01\x40{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"session/prompt\",\"params\":{\"sessionId\":\"x\",\"prompt\":[{\"type\":\"text\",\"text\":\"hello\"}]}}\r\n",
                ),
                s("\x00\x01not json\n\n\r\n{\n"),
            ],
            tokens: vec![
                b"\n",
                b"\r\n",
                b"{",
                b"}",
                b"\"",
                b"[",
                b"]",
                b"\\u0000",
                b"\xff",
                b"\xc3\xa9",
            ],
        },
        "sse" => Corpus {
            seeds: std::fs::read_dir(root.join("../mm-model/fixtures/sse"))
                .map(|d| {
                    d.filter_map(|e| std::fs::read(e.ok()?.path()).ok())
                        .collect()
                })
                .unwrap_or_default(),
            tokens: vec![
                b"data: ",
                b"\n\n",
                b"\n",
                b"\r\n",
                b": ping\n",
                b"[DONE]",
                b"{",
                b"}",
                b"\"content\":",
                b"\"tool_calls\":",
                b"\"index\":",
                b"\"finish_reason\":\"stop\"",
                b"<think>",
                b"</think>",
                b"<tool_call>",
                b"\"error\":",
                b"null",
                b"1e400",
            ],
        },
        "text-calls" => Corpus {
            // A seed per format mm reads (crates/mm-model/src/text_calls/), with prose around some.
            seeds: vec![
                s(
                    "Let me look.\n<tool_call>{\"name\": \"bash\", \"arguments\": {\"command\": \"ls\"}}</tool_call>",
                ),
                s("<tool_call>\n{'name': 'bash', 'arguments': {'command': 'ls',},}\n"),
                s("<tools>\n{\"name\": \"read_file\", \"arguments\": {\"path\": \"a\"}}\n</tools>"),
                s(
                    "<tool_call>\n<function=bash>\n<parameter=command>\nls\n</parameter>\n<parameter=timeout>\n5\n</parameter>\n</function>\n</tool_call>",
                ),
                s(
                    "<tool_call>read_file<arg_key>path</arg_key><arg_value>a</arg_value><arg_key>all</arg_key><arg_value>true</arg_value></tool_call>",
                ),
                s("{\"name\": \"bash\", \"parameters\": {\"command\": \"pwd\"}}<|eot_id|>"),
                s(
                    "<|python_tag|>bash.call(command=\"ls\"); {\"name\": \"read_file\", \"parameters\": {\"path\": \"x\"}}",
                ),
                s("[bash(command=\"ls\", timeout=3), read_file(path='a', all=True)]"),
                s("Checking.<|tool_call_start|>[bash(command='ls')]<|tool_call_end|>"),
                s("[TOOL_CALLS][{\"name\": \"read_file\", \"arguments\": {\"path\": \"a.txt\"}}]"),
                s(
                    "[TOOL_CALLS]bash[CALL_ID]abc123def[ARGS]{\"command\": \"pwd\"}[TOOL_CALLS]read_file{\"path\": \"b\"}",
                ),
                s(
                    "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>bash\n```json\n{\"command\": \"ls\"}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>",
                ),
                s(
                    "<|tool_calls_begin|><|tool_call_begin|>bash<|tool_sep|>{\"command\": \"ls\"}<|tool_call_end|>",
                ),
                s(
                    "<|tool_calls_section_begin|><|tool_call_begin|>functions.bash:0<|tool_call_argument_begin|>{\"command\": \"ls\"}<|tool_call_end|><|tool_calls_section_end|>",
                ),
                s(
                    "<|channel|>analysis<|message|>Think.<|end|><|start|>assistant<|channel|>commentary to=functions.bash <|constrain|>json<|message|>{\"command\": \"ls\"}<|call|>",
                ),
                s("<|tool_call>call:bash{command:<|\"|>ls -la<|\"|>,timeout:3}<tool_call|>"),
                s("<start_function_call>call:read_file{path:<escape>a<escape>}<end_function_call>"),
                s(
                    "<|tool_call|>[{\"name\": \"bash\", \"arguments\": {\"command\": \"ls\"}}]<|/tool_call|>",
                ),
                s(
                    "Action: ```json\n[{\"tool_name\": \"bash\", \"parameters\": {\"command\": \"ls\"}}]\n```",
                ),
                s(
                    "<|START_ACTION|>[{\"tool_call_id\": \"0\", \"tool_name\": \"bash\", \"parameters\": {}}]<|END_ACTION|>",
                ),
                s("<function=bash>{\"command\": \"ls\"}</function>"),
                s(">>>all\nLooking.>>>bash\n{\"command\": \"ls\"}"),
                s("bash\n{\"command\": \"ls\"}"),
                s(" functools[{\"name\": \"bash\", \"arguments\": {\"command\": \"ls\"}}]"),
                s(
                    "[{\"name\": \"read_file\", \"arguments\": {\"path\": \"a\"}}, {\"name\": \"bash\", \"arguments\": {}}]",
                ),
                s(
                    "<minimax:tool_call>\n<invoke name=\"bash\">\n<parameter name=\"command\">ls</parameter>\n</invoke>\n</minimax:tool_call>",
                ),
                s(
                    "<｜DSML｜function_calls><｜DSML｜invoke name=\"bash\"><｜DSML｜parameter name=\"timeout\" string=\"false\">3</｜DSML｜parameter></｜DSML｜invoke></｜DSML｜function_calls>",
                ),
                s("<|tools_prefix|>[{\"bash\": {\"command\": \"ls\"}}]<|tools_suffix|>"),
                s(
                    "[TOOL_REQUEST]{\"name\": \"bash\", \"arguments\": {\"command\": \"ls\"}}[END_TOOL_REQUEST]",
                ),
                s(
                    "<TOOLCALL>[{\"name\": \"bash\", \"arguments\": {\"command\": \"ls\"}}]</TOOLCALL>",
                ),
                s("```json\n{\"name\": \"bash\", \"arguments\": {\"command\": \"echo hi\"}}\n```"),
                s("```tool_code\nprint(bash(command=\"ls\"))\n```"),
                s(
                    "{\"tool_calls\": [{\"function\": {\"name\": \"bash\", \"arguments\": \"{\\\"command\\\": \\\"ls\\\"}\"}}]}",
                ),
                s("Plain text with < and [ and ` marks, {json} and >>> prompts."),
                s("<think><tool_call>{\"name\": \"bash\"}</tool_call></think>Done."),
                s(
                    "<longcat_tool_call>{\"name\": \"bash\", \"arguments\": {\"command\": \"ls\"}}</longcat_tool_call>",
                ),
                s(
                    "Sure.<|function_call|>{\"name\": \"bash\", \"arguments\": {\"command\": \"ls\"}}</s>",
                ),
                s(
                    "<|message_sep|>\n\nfunction call<|role_sep|>\n{\"name\": \"bash\", \"arguments\": {}}",
                ),
                s(
                    "<｜tool_calls_begin｜><｜tool_call_begin｜><steptml:invoke name=\"bash\"><steptml:parameter name=\"command\">ls</steptml:parameter></steptml:invoke><｜tool_call_end｜><｜tool_sep｜><｜tool_calls_end｜>",
                ),
                s("I'll look.\n\n<read_file>\n<path>a.txt</path>\n</read_file>"),
                s(
                    "<seed:think>maybe <tool_call>{\"name\": \"bash\", \"arguments\": {}}</tool_call></seed:think>[THINK]x[/THINK]",
                ),
                s(
                    "Like this:\n```xml\n<response>\n<tool_call>{\"name\": \"bash\", \"arguments\": {}}</tool_call>\n</response>\n```\nand `<tool_call>`",
                ),
                s("[get_weather(city='x')] and [bash(command='ls')]"),
            ],
            tokens: vec![
                b"<tool_call>",
                b"</tool_call>",
                b"<tools>",
                b"<function=",
                b"<parameter=",
                b"</parameter>",
                b"</function>",
                b"<arg_key>",
                b"<arg_value>",
                b"<|python_tag|>",
                b"<|tool_call_start|>",
                b"[TOOL_CALLS]",
                b"[ARGS]",
                b"[CALL_ID]",
                "<｜tool▁calls▁begin｜>".as_bytes(),
                "<｜tool▁call▁begin｜>".as_bytes(),
                "<｜tool▁sep｜>".as_bytes(),
                b"<|tool_call_begin|>",
                b"<|tool_call_argument_begin|>",
                b"<|channel|>",
                b"<|message|>",
                b" to=functions.",
                b"<|tool_call>",
                b"<|\"|>",
                b"<|tool_call|>",
                b"Action: ```json\n",
                b">>>",
                b"functools[",
                b"<invoke name=\"",
                b"<|tools_prefix|>",
                b"[TOOL_REQUEST]",
                b"<longcat_tool_call>",
                b"<|function_call|>",
                b"<|message_sep|>",
                b"function call<|role_sep|>",
                b"<steptml:invoke name=\"",
                b"<seed:think>",
                b"</seed:think>",
                b"[THINK]",
                b"[/THINK]",
                b"<|START_THINKING|>",
                b"<|channel>",
                b"<channel|>",
                b"</think>",
                b"<response>",
                b"<read_file>",
                b"<path>",
                b"</path>",
                b"`",
                b"```",
                b"```json\n",
                b"{",
                b"}",
                b"[",
                b"]",
                b"(",
                b"=",
                b"'",
                b"\\u",
                b"\"name\"",
                b"\"arguments\"",
                b"\"function\"",
                b"\"parameters\"",
                b"bash",
                b"True",
                b"\n",
            ],
        },
        "session-file" => Corpus {
            seeds: vec![s(SESSION_SEED)],
            tokens: vec![
                b"{",
                b"}",
                b"[",
                b"]",
                b",",
                b":",
                b"\"",
                b"null",
                b"true",
                b"1",
                b"-1",
                b"1e999",
                b"\"version\": 1",
                b"\"role\": \"tool\"",
                b"\"toolCalls\": []",
                b"\\ud800",
            ],
        },
        "config" => Corpus {
            seeds: vec![s(CONFIG_SEED)],
            tokens: vec![
                b"\n",
                b"[model]\n",
                b"[acp]\n",
                b"[[hooks.preToolCall]]\n",
                b"=",
                b"\"",
                b"'''",
                b"[",
                b"]",
                b"{",
                b"}",
                b"0",
                b"-1",
                b"inf",
                b"nan",
                b"1979-05-27T07:32:00Z",
                b"[mcp.servers.x]\n",
                b"[lsp.servers.y]\n",
                b"[agents.z]\n",
            ],
        },
        "skill" => Corpus {
            seeds: vec![
                s("---\nname: greetings\ndescription: Greet somebody.\n---\nSay hi.\n"),
                s(
                    "---\nname: aardvark\ndescription: >\n  Count\n  ants.\nallowed-tools: [bash]\nmetadata:\n  v: 1\n---\nbody\n",
                ),
                s("---\na: &a [x, x, x]\nb: &b [*a, *a, *a]\nname: n\ndescription: d\n---\n"),
            ],
            tokens: vec![
                b"---\n",
                b"...\n",
                b"name: ",
                b"description: ",
                b"\n",
                b": ",
                b"&a ",
                b"*a",
                b"[",
                b"]",
                b"{",
                b"}",
                b"- ",
                b"|\n  ",
                b">\n  ",
                b"!!binary ",
                b"\"",
                b"'",
                b"#",
                b"? ",
                b"%YAML 1.2\n",
            ],
        },
        _ => Corpus {
            seeds: vec![Vec::new()],
            tokens: vec![b"\n"],
        },
    }
}

const SESSION_SEED: &str = r#"{
  "version": 1,
  "id": "20260101-000000-abcdef01",
  "cwd": "/work/x",
  "createdAt": "2026-01-01T00:00:00+00:00",
  "updatedAt": "2026-01-01T00:00:00+00:00",
  "model": "qwen",
  "usage": {"inputTokens": 10, "outputTokens": 2, "totalTokens": 12, "thoughtTokens": 1},
  "plan": null,
  "messages": [
    {"role": "system", "content": "You are Bob."},
    {"role": "user", "content": "list files"},
    {"role": "assistant", "content": "", "toolCalls": [{"id": "c1", "ref": "call_1", "name": "bash", "arguments": "{\"command\":\"ls\"}"}]},
    {"role": "tool", "content": "a.txt", "toolCallId": "c1"},
    {"role": "user", "content": "summary", "compact": true},
    {"role": "tool", "content": "x", "toolCallId": "c2", "failed": true}
  ]
}
"#;

const CONFIG_SEED: &str = r#"yolo = false
contextWindow = 32768
maxSteps = 40
systemPrompt = "Be brief."
trustedProjects = ["/work"]

[model]
url = "http://127.0.0.1:8080/v1"
name = "qwen"
temperature = 0.2
maxTokens = 4096
requestTimeout = 600
textToolCalls = "auto"

[acp]
name = "bob"
maxLineBytes = 8388608

[sessions]
enabled = true
dir = ".mm/sessions"

[context]
threshold = 0.8
keepLastTurns = 2

[loop]
maxRepeats = 3

[tools]
maxOutput = 30000
bash = { timeout = 120 }

[[hooks.preToolCall]]
command = "guard.sh"
match = "bash|write_file"
timeout = 10

[mcp.servers.gh]
command = "gh-mcp"
env = { TOKEN = "x" }
permissions = "ask"
"#;

/// One input: a mutated seed most of the time, else random bytes and tokens.
fn input(rng: &mut Rng, corpus: &Corpus) -> Vec<u8> {
    if corpus.seeds.is_empty() || rng.chance(5) {
        let mut out = Vec::new();
        let pieces = rng.below(48);
        for _ in 0..pieces {
            if rng.chance(2) {
                out.extend_from_slice(corpus.tokens[rng.below(corpus.tokens.len())]);
            } else {
                for _ in 0..rng.below(8) {
                    out.push(rng.next() as u8);
                }
            }
        }
        return out;
    }
    let mut data = corpus.seeds[rng.below(corpus.seeds.len())].clone();
    for _ in 0..1 + rng.below(8) {
        mutate(rng, corpus, &mut data);
    }
    data.truncate(64 * 1024);
    data
}

fn mutate(rng: &mut Rng, corpus: &Corpus, data: &mut Vec<u8>) {
    let at = rng.below(data.len() + 1);
    match rng.below(8) {
        0 if !data.is_empty() => {
            let i = rng.below(data.len());
            data[i] ^= 1 << rng.below(8);
        }
        1 if !data.is_empty() => {
            let i = rng.below(data.len());
            data[i] = rng.next() as u8;
        }
        2 => {
            let token = corpus.tokens[rng.below(corpus.tokens.len())];
            data.splice(at..at, token.iter().copied());
        }
        3 if !data.is_empty() => {
            let end = (at + 1 + rng.below(32)).min(data.len());
            data.drain(at.min(end)..end);
        }
        4 if !data.is_empty() => {
            // A piece of the input again (repetition, nesting).
            let from = rng.below(data.len());
            let end = (from + 1 + rng.below(64)).min(data.len());
            let piece: Vec<u8> = data[from..end].to_vec();
            for _ in 0..1 + rng.below(4) {
                data.splice(at..at, piece.iter().copied());
            }
        }
        5 => {
            // Another seed's piece.
            let other = &corpus.seeds[rng.below(corpus.seeds.len())];
            if !other.is_empty() {
                let from = rng.below(other.len());
                let end = (from + 1 + rng.below(128)).min(other.len());
                data.splice(at..at, other[from..end].iter().copied());
            }
        }
        6 => data.truncate(at),
        _ => {
            let token = corpus.tokens[rng.below(corpus.tokens.len())];
            data.extend_from_slice(token);
        }
    }
}

// ------------------------------------------------------------------ the worker

static CURRENT: AtomicPtr<u8> = AtomicPtr::new(std::ptr::null_mut());
static CURRENT_LEN: AtomicUsize = AtomicUsize::new(0);
static ABORT_FILE: OnceLock<CString> = OnceLock::new();

/// On SIGABRT (a stack overflow, an allocation failure, a panic while panicking): the input
/// being run goes to the abort file, with async-signal-safe calls only, then the process dies
/// of the signal.
extern "C" fn on_abort(sig: libc::c_int) {
    if let Some(path) = ABORT_FILE.get() {
        let ptr = CURRENT.load(Ordering::SeqCst);
        let len = CURRENT_LEN.load(Ordering::SeqCst);
        // SAFETY: open/write/close/signal/raise are async-signal-safe; `ptr` and `len` describe
        // the input the worker is running, which lives until the next input is published.
        unsafe {
            let fd = libc::open(
                path.as_ptr(),
                libc::O_WRONLY | libc::O_CREAT | libc::O_TRUNC,
                0o644,
            );
            if fd >= 0 {
                if !ptr.is_null() {
                    // `as _`: the count is a size_t on Unix, an unsigned int on Windows.
                    libc::write(fd, ptr.cast(), len as _);
                }
                libc::close(fd);
            }
        }
    }
    // SAFETY: back to the default action, then the signal again: the process ends as it would.
    unsafe {
        libc::signal(sig, libc::SIG_DFL);
        libc::raise(sig);
    }
}

fn peak_rss_kb() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        })
        .unwrap_or(0)
}

static PANIC_MESSAGE: Mutex<String> = Mutex::new(String::new());

fn worker(seconds: f64, seed: u64, out: &Path, only: Option<&str>) {
    let abort_file = out.join(format!("abort-{seed}.bin"));
    let _ = ABORT_FILE.set(CString::new(abort_file.to_string_lossy().as_bytes()).unwrap());
    // SAFETY: installs a handler that only makes async-signal-safe calls.
    unsafe {
        libc::signal(libc::SIGABRT, on_abort as *const () as libc::sighandler_t);
    }
    std::panic::set_hook(Box::new(|info| {
        if let Ok(mut m) = PANIC_MESSAGE.lock() {
            *m = info.to_string();
        }
    }));
    let corpora: Vec<Corpus> = fuzz::TARGETS.iter().map(|(name, _)| corpus(name)).collect();
    let mut rng = Rng(seed);
    let mut tried = vec![0u64; fuzz::TARGETS.len()];
    let mut crashes = vec![0u64; fuzz::TARGETS.len()];
    let started = Instant::now();
    let mut last_report = Instant::now();
    let stdout = std::io::stdout();
    let report = |tried: &[u64], crashes: &[u64], word: &str| {
        let mut line = word.to_string();
        for (t, c) in tried.iter().zip(crashes) {
            line.push_str(&format!(" {t}:{c}"));
        }
        line.push_str(&format!(" rss:{}", peak_rss_kb()));
        let mut o = stdout.lock();
        let _ = writeln!(o, "{line}");
        let _ = o.flush();
    };
    'run: loop {
        for (i, (name, target)) in fuzz::TARGETS.iter().enumerate() {
            if only.is_some_and(|o| o != *name) {
                continue;
            }
            // A batch per target between clock reads.
            for _ in 0..256 {
                let data = input(&mut rng, &corpora[i]);
                CURRENT_LEN.store(0, Ordering::SeqCst);
                CURRENT.store(data.as_ptr().cast_mut(), Ordering::SeqCst);
                CURRENT_LEN.store(data.len(), Ordering::SeqCst);
                let result = std::panic::catch_unwind(|| target(&data));
                CURRENT.store(std::ptr::null_mut(), Ordering::SeqCst);
                tried[i] += 1;
                if result.is_err() {
                    crashes[i] += 1;
                    let n = crashes[i];
                    let stem = out.join(format!("crash-{name}-{seed}-{n}"));
                    let _ = std::fs::write(stem.with_extension("bin"), &data);
                    let message = PANIC_MESSAGE.lock().map(|m| m.clone()).unwrap_or_default();
                    let _ = std::fs::write(stem.with_extension("txt"), message);
                }
            }
        }
        if last_report.elapsed() >= Duration::from_millis(500) {
            report(&tried, &crashes, "progress");
            last_report = Instant::now();
        }
        if started.elapsed().as_secs_f64() >= seconds {
            break 'run;
        }
    }
    report(&tried, &crashes, "done");
}

// ------------------------------------------------------------------ the parent

struct Totals {
    tried: Vec<u64>,
    crashes: Vec<u64>,
    /// Workers that died (an abort).
    died: u64,
    /// Workers that stopped reporting progress (stopped with SIGABRT).
    hung: u64,
    peak_rss_kb: u64,
}

/// Parses `word t:c t:c … rss:N`.
fn parse_report(line: &str) -> Option<(Vec<u64>, Vec<u64>, u64)> {
    let mut parts = line.split_whitespace();
    parts.next()?;
    let mut tried = Vec::new();
    let mut crashes = Vec::new();
    let mut rss = 0;
    for p in parts {
        if let Some(r) = p.strip_prefix("rss:") {
            rss = r.parse().ok()?;
        } else {
            let (t, c) = p.split_once(':')?;
            tried.push(t.parse().ok()?);
            crashes.push(c.parse().ok()?);
        }
    }
    Some((tried, crashes, rss))
}

/// Ends a hung worker so that its input is written like an abort's: SIGABRT on Unix; Windows
/// has no signal to send another process, so there it is only ended.
#[cfg(unix)]
fn abort(child: &mut std::process::Child) {
    // SAFETY: a signal to our own child, which is alive (its stdout is open).
    unsafe {
        libc::kill(child.id() as libc::pid_t, libc::SIGABRT);
    }
}

#[cfg(not(unix))]
fn abort(child: &mut std::process::Child) {
    let _ = child.kill();
}

/// Runs one worker process until its time is up, it dies or it hangs (no report for `hang`);
/// adds what it reported.
fn run_worker(
    seconds: f64,
    seed: u64,
    out: &Path,
    only: Option<&str>,
    hang: Duration,
    totals: &Mutex<Totals>,
) {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--worker",
            "--seconds",
            &seconds.to_string(),
            "--seed",
            &seed.to_string(),
        ])
        .args(["--out".as_ref(), out.as_os_str()])
        .args(only.map(|o| ["--only", o]).into_iter().flatten())
        .stdout(Stdio::piped())
        .spawn()
        .expect("start a worker");
    let (tx, rx) = mpsc::channel();
    let stdout = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let mut last = None;
    let mut hung = false;
    loop {
        match rx.recv_timeout(hang) {
            Ok(line) => {
                if let Some(r) = parse_report(&line) {
                    last = Some(r);
                }
            }
            Err(mpsc::RecvTimeoutError::Timeout) if !hung => {
                hung = true;
                abort(&mut child);
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
        }
    }
    let status = child.wait().unwrap();
    let mut t = totals.lock().unwrap();
    if let Some((tried, crashes, rss)) = last {
        for (i, (a, b)) in tried.iter().zip(&crashes).enumerate() {
            t.tried[i] += a;
            t.crashes[i] += b;
        }
        t.peak_rss_kb = t.peak_rss_kb.max(rss);
    }
    if hung {
        t.hung += 1;
        eprintln!(
            "worker {seed} hung (no progress for {} s); its input is in {}",
            hang.as_secs_f64(),
            out.join(format!("abort-{seed}.bin")).display()
        );
    } else if !status.success() {
        t.died += 1;
        eprintln!(
            "worker {seed} died ({status}); its input is in {}",
            out.join(format!("abort-{seed}.bin")).display()
        );
    }
}

fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let value = |flag: &str| {
        args.iter()
            .position(|a| a == flag)
            .and_then(|i| args.get(i + 1))
            .cloned()
    };
    let seconds: f64 = value("--seconds").map_or(60.0, |v| v.parse().expect("--seconds N"));
    let seed: u64 = value("--seed").map_or_else(
        || {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos() as u64
        },
        |v| v.parse().expect("--seed S"),
    );
    let out = PathBuf::from(value("--out").unwrap_or_else(|| "target/fuzz-crashes".into()));
    std::fs::create_dir_all(&out).unwrap();
    let only = value("--only");
    if let Some(only) = &only {
        assert!(
            fuzz::TARGETS.iter().any(|(name, _)| name == only),
            "--only: no target {only}"
        );
    }
    if args.iter().any(|a| a == "--worker") {
        worker(seconds, seed, &out, only.as_deref());
        return;
    }
    let workers: usize = value("--workers").map_or(2, |v| v.parse().expect("--workers W"));
    let hang = Duration::from_secs_f64(
        value("--hang-seconds").map_or(10.0, |v| v.parse().expect("--hang-seconds H")),
    );
    println!(
        "fuzz: {workers} worker(s) × {seconds} s, seed {seed}, crashes to {}",
        out.display()
    );
    let totals = Mutex::new(Totals {
        tried: vec![0; fuzz::TARGETS.len()],
        crashes: vec![0; fuzz::TARGETS.len()],
        died: 0,
        hung: 0,
        peak_rss_kb: 0,
    });
    let started = Instant::now();
    std::thread::scope(|scope| {
        for w in 0..workers {
            let (totals, out, only) = (&totals, &out, only.as_deref());
            scope.spawn(move || {
                let mut n = 0u64;
                // A worker that died is replaced for the time left.
                loop {
                    let left = seconds - started.elapsed().as_secs_f64();
                    if left <= 0.1 {
                        break;
                    }
                    let worker_seed = seed.wrapping_add((w as u64) << 32).wrapping_add(n);
                    run_worker(left, worker_seed, out, only, hang, totals);
                    n += 1;
                }
            });
        }
    });
    let elapsed = started.elapsed().as_secs_f64();
    let t = totals.into_inner().unwrap();
    println!("{:<14} {:>14} {:>8}", "target", "inputs", "crashes");
    for (i, (name, _)) in fuzz::TARGETS.iter().enumerate() {
        println!(
            "{:<14} {:>14} {:>8}",
            name,
            thousands(t.tried[i]),
            t.crashes[i]
        );
    }
    let tried: u64 = t.tried.iter().sum();
    let crashes: u64 = t.crashes.iter().sum::<u64>() + t.died + t.hung;
    println!("{:<14} {:>14} {:>8}", "total", thousands(tried), crashes);
    println!(
        "{} inputs/s over {elapsed:.0} s; workers that died: {}, that hung: {}; peak RSS of a worker: {:.1} MB",
        thousands((tried as f64 / elapsed) as u64),
        t.died,
        t.hung,
        t.peak_rss_kb as f64 / 1024.0
    );
    if crashes > 0 {
        std::process::exit(1);
    }
}
