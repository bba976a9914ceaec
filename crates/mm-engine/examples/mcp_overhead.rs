//! The overhead of an MCP tool call through mm (the dispatcher, the `McpTool`, the shared
//! client) over a direct rmcp client call to the same server command. Run by bench/mcp.sh:
//!
//!     cargo run --release --example mcp_overhead -- [CALLS] [COMMAND ARGS…]
//!
//! Default server: crates/mm/tests/fixtures/mcp/fake_mcp.py (`echo`); with `mcp-server-everything stdio`
//! its `echo` is called instead. Calls alternate between the two paths so that both see the
//! same machine; the overhead is the median of mm's times minus the median of the direct ones.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::print_stdout)]

use std::process::Stdio;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use mm_core::config::{HooksConfig, McpServerConfig, McpTiming};
use mm_core::event::{Event, Form, FormAnswer, Frontend, PermissionDecision, PermissionRequest};
use mm_core::history::ToolCall;
use mm_engine::SessionServers;
use mm_tools::hooks::Hooks;
use mm_tools::mcp::{McpServers, spec};
use mm_tools::process::Supervisor;
use mm_tools::tools::Toolbox;
use mm_tools::tools::dispatch::{Gates, TurnEnv, dispatch};
use mm_tools::tools::gate::Rules;
use mm_tools::tools::repeat::RepeatDetector;
use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use serde_json::json;
use tokio_util::sync::CancellationToken;

struct Quiet;

#[async_trait]
impl Frontend for Quiet {
    fn emit(&self, _event: Event) {}
    async fn ask_permission(
        &self,
        _r: PermissionRequest,
        _c: &CancellationToken,
    ) -> PermissionDecision {
        PermissionDecision::AllowOnce
    }
    async fn ask_user(&self, _f: Form, _c: &CancellationToken) -> FormAnswer {
        FormAnswer::Declined
    }
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let mut argv = std::env::args().skip(1);
    let calls: usize = argv.next().and_then(|n| n.parse().ok()).unwrap_or(300);
    let rest: Vec<String> = argv.collect();
    let fixture = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../mm/tests/fixtures/mcp/fake_mcp.py"
    );
    let (command, args) = match rest.split_first() {
        Some((c, a)) => (c.clone(), a.to_vec()),
        None => (
            "python3".to_string(),
            vec![fixture.to_string(), "ok".to_string()],
        ),
    };
    let everything = command.contains("everything");
    let (tool, arg) = if everything {
        ("echo", "message")
    } else {
        ("echo", "text")
    };
    let cwd = std::env::current_dir().unwrap();

    // Through mm: the session's toolbox, the one dispatcher.
    let processes = Supervisor::new();
    let timing = McpTiming {
        start: Duration::from_secs(60),
        list_wait: Duration::from_secs(60),
        ..McpTiming::default()
    };
    let servers = McpServers::new(processes.clone(), Default::default(), timing);
    let mut session = SessionServers::default();
    session.attach(
        &servers,
        spec("bench", &McpServerConfig::new(&command, args.clone()), &cwd),
    );
    let cancel = CancellationToken::new();
    session.prepare(&servers, &Quiet, &cancel).await;
    let tools: Toolbox = session
        .toolbox(&Toolbox::default())
        .expect("no tools listed");
    let name = format!("bench__{tool}");
    assert!(tools.get(&name).is_some(), "{name} is not offered");
    let hooks = Hooks::new(&HooksConfig::default(), processes.clone());
    let mut repeat = RepeatDetector::new(3);
    let mut rules = Rules::default();

    // Directly: the same command, its own rmcp client (the baseline: not through the Supervisor).
    #[allow(
        clippy::disallowed_methods,
        reason = "the bench's baseline bypasses mm"
    )]
    let mut child = tokio::process::Command::new(&command)
        .args(&args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let transport = (child.stdout.take().unwrap(), child.stdin.take().unwrap());
    let direct = ().serve(transport).await.unwrap();

    let (mut through, mut plain) = (Vec::new(), Vec::new());
    for i in 0..calls + 20 {
        let text = format!("hi {i}");
        let call = ToolCall {
            id: format!("c{i}"),
            ref_: format!("call_{i}"),
            name: name.clone(),
            arguments: json!({ arg: text }).to_string(),
        };
        let env = TurnEnv {
            tools: &tools,
            cwd: &cwd,
            session_id: "bench",
            mode: mm_core::event::PermissionMode::Yolo,
            max_output: 30_000,
            frontend: &Quiet,
            hooks: &hooks,
            journal: None,
            subagents: None,
        };
        let gates = Gates {
            repeat: &mut repeat,
            rules: &mut rules,
        };
        let t = Instant::now();
        let d = dispatch(&env, gates, &call, &cancel).await;
        let mm_ms = t.elapsed().as_secs_f64() * 1000.0;
        assert!(d.output.contains(&text), "{}", d.output);

        let mut params = CallToolRequestParams::new(tool);
        params.arguments = json!({ arg: text }).as_object().cloned();
        let t = Instant::now();
        let r = direct.peer().call_tool(params).await.unwrap();
        let direct_ms = t.elapsed().as_secs_f64() * 1000.0;
        assert!(!r.content.is_empty());
        // The first calls warm both paths up.
        if i >= 20 {
            through.push(mm_ms);
            plain.push(direct_ms);
        }
    }
    let (m, d) = (median(&mut through), median(&mut plain));
    println!("server: {command} {}", args.join(" "));
    println!("calls: {calls} each way, alternating");
    println!("median through mm: {m:.3} ms");
    println!("median direct rmcp: {d:.3} ms");
    println!(
        "overhead (median difference): {:.3} ms  (target < 2 ms: {})",
        m - d,
        if m - d < 2.0 { "yes" } else { "NO" }
    );
    drop(direct);
    processes.shutdown().await;
    // A missed target is a failed run.
    if m - d >= 2.0 {
        std::process::exit(1);
    }
}
