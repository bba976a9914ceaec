//! Python started in the project (docs/sandbox.md, "What runs outside the fence"): `python -m
//! pkg`, `python -c …` and a Python reading its program from stdin put their working folder —
//! the project, for a server, a hook or an agent mm starts there — first on `sys.path`, so a
//! `pkg/` that the repository ships (or a fenced command wrote) is imported before the user's
//! own. Such a start gets `PYTHONSAFEPATH=1` (Python 3.11 and later), which leaves that folder
//! out. A Python that runs a script file keeps the script's folder first instead, where its own
//! modules are, and is left alone.

use std::collections::BTreeMap;
use std::path::Path;

/// The variable that keeps Python's working folder off `sys.path`.
pub const SAFE_PATH_VAR: &str = "PYTHONSAFEPATH";

/// Whether `program args…` is a Python that would put its working folder first on `sys.path`:
/// `python`, `python3`, `python3.12`… (in any folder; `.exe` on Windows) with `-m`, `-c`, `-`
/// or no script; `uv`, `uvx` and `pipx` unless an argument names a `.py` file (`uv run -m
/// pkg`; `uvx tool`, whose entry point needs nothing of its folder, is unharmed).
pub fn cwd_first(program: &str, args: &[String]) -> bool {
    let base = Path::new(program)
        .file_name()
        .map(|n| n.to_string_lossy().to_ascii_lowercase())
        .unwrap_or_default();
    let base = base.strip_suffix(".exe").unwrap_or(&base);
    match base {
        "uv" | "uvx" | "pipx" => !args.iter().any(|a| a.ends_with(".py")),
        _ if is_python(base) => python_cwd_first(args),
        _ => false,
    }
}

/// [`cwd_first`] for a hook's shell line, read as its words: `VAR=value` assignments and
/// `exec` before the program are skipped; quotes are not read.
pub fn line_cwd_first(line: &str) -> bool {
    let mut words = line
        .split_whitespace()
        .skip_while(|w| *w == "exec" || is_assignment(w));
    let Some(program) = words.next() else {
        return false;
    };
    let args: Vec<String> = words.map(str::to_string).collect();
    cwd_first(program, &args)
}

/// Sets `PYTHONSAFEPATH=1` on `cmd` when `cwd_first`, unless the entry's own `env` sets the
/// variable (an empty value turns it off).
pub fn protect(cmd: &mut tokio::process::Command, cwd_first: bool, env: &BTreeMap<String, String>) {
    if cwd_first && !env.contains_key(SAFE_PATH_VAR) {
        cmd.env(SAFE_PATH_VAR, "1");
    }
}

/// `python`, `python3`, `python3.12`, `pythonw`.
fn is_python(base: &str) -> bool {
    base.strip_prefix("python")
        .is_some_and(|rest| rest == "w" || rest.chars().all(|c| c.is_ascii_digit() || c == '.'))
}

fn is_assignment(word: &str) -> bool {
    word.split_once('=').is_some_and(|(name, _)| {
        !name.is_empty()
            && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            && !name.starts_with(|c: char| c.is_ascii_digit())
    })
}

/// Python's own options, up to what it runs: `-m`, `-c` or `-` run something that is not a
/// script file (the working folder first); the first other word is the script.
fn python_cwd_first(args: &[String]) -> bool {
    let mut words = args.iter();
    while let Some(word) = words.next() {
        let w = word.as_str();
        if w == "-" {
            return true;
        }
        if w == "--" {
            return words.next().is_none_or(|next| next == "-");
        }
        if let Some(long) = w.strip_prefix("--") {
            // The one long option that takes a value.
            if long == "check-hash-based-pycs" {
                words.next();
            }
            continue;
        }
        let Some(flags) = w.strip_prefix('-') else {
            return false;
        };
        for (i, flag) in flags.char_indices() {
            match flag {
                'm' | 'c' => return true,
                // `-X opt`, `-W arg`; or joined: `-Xdev`.
                'X' | 'W' => {
                    if i + 1 == flags.len() {
                        words.next();
                    }
                    break;
                }
                _ => {}
            }
        }
    }
    // No script: the program comes from stdin (or it is the REPL).
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(line: &str) -> Vec<String> {
        line.split_whitespace().map(str::to_string).collect()
    }

    #[test]
    fn a_python_that_puts_its_folder_first_is_found() {
        let cases = [
            ("python3", "-m pkg", true),
            ("/usr/bin/python3.12", "-u -m pkg --port 1", true),
            ("python", "-Bm pkg", true),
            ("python3", "-c print(1)", true),
            ("python3", "-X dev -W ignore -m pkg", true),
            ("python3", "-Xdev script.py", false),
            ("python3", "-", true),
            ("python3", "", true),
            ("python3", "-u server.py -m x", false),
            ("python3", "/home/u/mcp/server.py", false),
            ("python3", "-- -", true),
            ("python3", "-- server.py", false),
            ("PYTHON.EXE", "-m pkg", true),
            ("pythonw", "-m pkg", true),
            ("uvx", "mcp-server-git", true),
            ("uv", "run -m pkg", true),
            ("uv", "--directory /srv/weather run weather.py", false),
            ("pipx", "run tool", true),
            ("npx", "-y server", false),
            ("python-lsp", "-m x", false),
            ("pythonista", "", false),
        ];
        for (program, args, first) in cases {
            assert_eq!(cwd_first(program, &words(args)), first, "{program} {args}");
        }
    }

    #[test]
    fn a_hooks_line_is_read_as_its_words() {
        assert!(line_cwd_first("python3 -m guard"));
        assert!(line_cwd_first("LANG=C exec python3 -m guard --strict"));
        assert!(!line_cwd_first("python3 ~/hooks/guard.py"));
        assert!(!line_cwd_first("./guard.sh"));
        assert!(!line_cwd_first(""));
    }

    #[test]
    fn the_entrys_own_value_stays() {
        let get = |first: bool, env: &[(&str, &str)]| {
            let mut cmd = tokio::process::Command::new("python3");
            let env: BTreeMap<String, String> = env
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
            protect(&mut cmd, first, &env);
            cmd.as_std()
                .get_envs()
                .find(|(k, _)| *k == SAFE_PATH_VAR)
                .and_then(|(_, v)| v.map(|v| v.to_string_lossy().into_owned()))
        };
        assert_eq!(get(true, &[]).as_deref(), Some("1"));
        assert_eq!(get(false, &[]), None);
        assert_eq!(get(true, &[(SAFE_PATH_VAR, "")]), None);
    }
}
