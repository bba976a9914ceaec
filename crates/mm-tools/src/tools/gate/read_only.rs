//! The programs mm knows to be read-only in some forms, and those forms: for each, the options
//! it may be given, every other option voiding the form. Lists of dangerous options are never
//! complete (`git log --output`, `rg --pre`, `find -fprintf`), so the table lists what is
//! allowed instead. A form is what `[a]lways` remembers for such a program (docs/engine.md,
//! "Permission gate"): `git log -1` approved, `git log --oneline` runs unasked, `git log
//! --output=f` is asked.
//!
//! Read, never copied: Codex's `is_safe_command` (codex-rs), which lists dangerous options.
//!
//! A program is known by its bare name only (`./ls` or `/tmp/git` may be anything), and a word
//! the shell would expand (`*`, `~`) may become any option, so it voids the form unless it comes
//! after `--`.

use super::words::Word;

/// How a long option takes its value.
#[derive(Clone, Copy)]
enum Takes {
    /// `--all`
    Nothing,
    /// `--format=x` or `--format x`
    Value,
    /// `--color` or `--color=x`, never the next word
    Attached,
}
use Takes::{Attached, Nothing, Value};

/// The options of one program (or git subcommand).
struct Options {
    /// Short options without a value, clustered freely (`-la`).
    flags: &'static str,
    /// Short options with a value, attached (`-n5`) or the next word (`-n 5`).
    valued: &'static str,
    /// Short options whose value, if any, is attached (`-U3`, `-M50%`).
    attached: &'static str,
    /// `-5`: a count (head, tail, git log, grep's context).
    counts: bool,
    long: &'static [(&'static str, Takes)],
}

/// Whether every option in `words` is one `options` allows (its value included).
fn allowed(options: &Options, words: &[Word]) -> bool {
    let mut words = words.iter();
    // A value given as the next word: never an option, never expanded.
    let value = |w: Option<&Word>| w.is_some_and(|w| !w.text.starts_with('-') && !w.expands);
    while let Some(w) = words.next() {
        let t = w.text.as_str();
        if w.expands {
            return false;
        }
        if t == "--" {
            // Operands only from here: what expands can no longer be an option.
            return true;
        }
        if t == "-" || !t.starts_with('-') {
            continue;
        }
        if let Some(long) = t.strip_prefix("--") {
            let (name, attached) = match long.split_once('=') {
                Some((name, _)) => (name, true),
                None => (long, false),
            };
            let Some((_, takes)) = options.long.iter().find(|(n, _)| *n == name) else {
                return false;
            };
            let ok = match takes {
                Nothing => !attached,
                Value => attached || value(words.next()),
                Attached => true,
            };
            if !ok {
                return false;
            }
            continue;
        }
        let cluster = &t[1..];
        if options.counts && cluster.chars().all(|c| c.is_ascii_digit()) {
            continue;
        }
        for (i, c) in cluster.char_indices() {
            if options.flags.contains(c) {
                continue;
            }
            if options.attached.contains(c) {
                break;
            }
            if options.valued.contains(c) {
                if i + c.len_utf8() == cluster.len() && !value(words.next()) {
                    return false;
                }
                break;
            }
            return false;
        }
    }
    true
}

const CAT: Options = Options {
    flags: "AbeEnstTuv",
    valued: "",
    attached: "",
    counts: false,
    long: &[
        ("number", Nothing),
        ("number-nonblank", Nothing),
        ("show-all", Nothing),
        ("show-ends", Nothing),
        ("show-nonprinting", Nothing),
        ("show-tabs", Nothing),
        ("squeeze-blank", Nothing),
    ],
};

const ECHO: Options = Options {
    flags: "neE",
    valued: "",
    attached: "",
    counts: false,
    long: &[],
};

const HEAD: Options = Options {
    flags: "qvz",
    valued: "nc",
    attached: "",
    counts: true,
    long: &[
        ("bytes", Value),
        ("lines", Value),
        ("quiet", Nothing),
        ("silent", Nothing),
        ("verbose", Nothing),
        ("zero-terminated", Nothing),
    ],
};

/// `tail` without `-f`: it would wait for ever.
const TAIL: Options = HEAD;

const WC: Options = Options {
    flags: "clmwL",
    valued: "",
    attached: "",
    counts: false,
    long: &[
        ("bytes", Nothing),
        ("chars", Nothing),
        ("lines", Nothing),
        ("max-line-length", Nothing),
        ("words", Nothing),
    ],
};

const PWD: Options = Options {
    flags: "LP",
    valued: "",
    attached: "",
    counts: false,
    long: &[],
};

const LS: Options = Options {
    flags: "aAbBcCdfFgGhHiklLmnNopqQrRsStuUvxXZ1",
    valued: "IwT",
    attached: "",
    counts: false,
    long: &[
        ("all", Nothing),
        ("almost-all", Nothing),
        ("author", Nothing),
        ("block-size", Value),
        ("classify", Attached),
        ("color", Attached),
        ("context", Nothing),
        ("dereference", Nothing),
        ("directory", Nothing),
        ("escape", Nothing),
        ("file-type", Nothing),
        ("format", Value),
        ("full-time", Nothing),
        ("group-directories-first", Nothing),
        ("hide", Value),
        ("human-readable", Nothing),
        ("ignore", Value),
        ("ignore-backups", Nothing),
        ("indicator-style", Value),
        ("inode", Nothing),
        ("literal", Nothing),
        ("no-group", Nothing),
        ("numeric-uid-gid", Nothing),
        ("quote-name", Nothing),
        ("quoting-style", Value),
        ("recursive", Nothing),
        ("reverse", Nothing),
        ("si", Nothing),
        ("size", Nothing),
        ("sort", Value),
        ("time", Value),
        ("time-style", Value),
        ("width", Value),
    ],
};

/// GNU grep: it runs nothing and writes nothing, whatever its options; the list is still one of
/// what is allowed.
const GREP: Options = Options {
    flags: "abcEFGhHiIlLnoPqrRsTUvwxyzZ",
    valued: "efmABCdD",
    attached: "",
    counts: true,
    long: &[
        ("after-context", Value),
        ("basic-regexp", Nothing),
        ("before-context", Value),
        ("binary-files", Value),
        ("byte-offset", Nothing),
        ("color", Attached),
        ("colour", Attached),
        ("context", Value),
        ("count", Nothing),
        ("dereference-recursive", Nothing),
        ("exclude", Value),
        ("exclude-dir", Value),
        ("extended-regexp", Nothing),
        ("file", Value),
        ("files-with-matches", Nothing),
        ("files-without-match", Nothing),
        ("fixed-strings", Nothing),
        ("ignore-case", Nothing),
        ("include", Value),
        ("invert-match", Nothing),
        ("line-number", Nothing),
        ("line-regexp", Nothing),
        ("max-count", Value),
        ("no-filename", Nothing),
        ("no-ignore-case", Nothing),
        ("no-messages", Nothing),
        ("null", Nothing),
        ("null-data", Nothing),
        ("only-matching", Nothing),
        ("perl-regexp", Nothing),
        ("quiet", Nothing),
        ("recursive", Nothing),
        ("regexp", Value),
        ("silent", Nothing),
        ("text", Nothing),
        ("with-filename", Nothing),
        ("word-regexp", Nothing),
    ],
};

/// ripgrep without `--pre` (runs a command per file), `--search-zip`/`-z` (runs decompressors)
/// and `--hostname-bin`.
const RG: Options = Options {
    flags: "abcFHiIlLnNopPqsSuUvwx0.",
    valued: "ABCdeEfgjmMrtT",
    attached: "",
    counts: false,
    long: &[
        ("after-context", Value),
        ("before-context", Value),
        ("byte-offset", Nothing),
        ("case-sensitive", Nothing),
        ("color", Value),
        ("column", Nothing),
        ("context", Value),
        ("count", Nothing),
        ("count-matches", Nothing),
        ("encoding", Value),
        ("file", Value),
        ("files", Nothing),
        ("files-with-matches", Nothing),
        ("files-without-match", Nothing),
        ("fixed-strings", Nothing),
        ("follow", Nothing),
        ("glob", Value),
        ("heading", Nothing),
        ("hidden", Nothing),
        ("iglob", Value),
        ("ignore-case", Nothing),
        ("invert-match", Nothing),
        ("json", Nothing),
        ("line-number", Nothing),
        ("line-regexp", Nothing),
        ("max-columns", Value),
        ("max-count", Value),
        ("max-depth", Value),
        ("max-filesize", Value),
        ("multiline", Nothing),
        ("no-column", Nothing),
        ("no-filename", Nothing),
        ("no-heading", Nothing),
        ("no-ignore", Nothing),
        ("no-line-number", Nothing),
        ("no-messages", Nothing),
        ("null", Nothing),
        ("only-matching", Nothing),
        ("pcre2", Nothing),
        ("quiet", Nothing),
        ("regexp", Value),
        ("replace", Value),
        ("smart-case", Nothing),
        ("sort", Value),
        ("sortr", Value),
        ("stats", Nothing),
        ("text", Nothing),
        ("threads", Value),
        ("trim", Nothing),
        ("type", Value),
        ("type-list", Nothing),
        ("type-not", Value),
        ("vimgrep", Nothing),
        ("with-filename", Nothing),
        ("word-regexp", Nothing),
    ],
};

/// `git log`, `git show` and `git diff`: without `--output` (writes any file), `--ext-diff`,
/// `--textconv` and `--show-signature` (run programs).
const GIT_LOG: Options = Options {
    flags: "bipqRsw",
    valued: "nSG",
    attached: "MCU",
    counts: true,
    long: &[
        ("abbrev", Attached),
        ("abbrev-commit", Nothing),
        ("after", Value),
        ("all", Nothing),
        ("ancestry-path", Nothing),
        ("author", Value),
        ("author-date-order", Nothing),
        ("before", Value),
        ("boundary", Nothing),
        ("branches", Attached),
        ("cached", Nothing),
        ("check", Nothing),
        ("cherry-pick", Nothing),
        ("color", Attached),
        ("committer", Value),
        ("compact-summary", Nothing),
        ("date", Value),
        ("date-order", Nothing),
        ("decorate", Attached),
        ("diff-filter", Value),
        ("dirstat", Attached),
        ("exit-code", Nothing),
        ("find-renames", Attached),
        ("first-parent", Nothing),
        ("follow", Nothing),
        ("format", Value),
        ("full-diff", Nothing),
        ("full-index", Nothing),
        ("graph", Nothing),
        ("grep", Value),
        ("histogram", Nothing),
        ("ignore-all-space", Nothing),
        ("ignore-blank-lines", Nothing),
        ("ignore-space-change", Nothing),
        ("left-right", Nothing),
        ("max-count", Value),
        ("merges", Nothing),
        ("minimal", Nothing),
        ("name-only", Nothing),
        ("name-status", Nothing),
        ("no-abbrev-commit", Nothing),
        ("no-color", Nothing),
        ("no-decorate", Nothing),
        ("no-ext-diff", Nothing),
        ("no-merges", Nothing),
        ("no-patch", Nothing),
        ("no-renames", Nothing),
        ("no-textconv", Nothing),
        ("numstat", Nothing),
        ("oneline", Nothing),
        ("patch", Nothing),
        ("patience", Nothing),
        ("pretty", Attached),
        ("quiet", Nothing),
        ("raw", Nothing),
        ("relative", Attached),
        ("remotes", Attached),
        ("reverse", Nothing),
        ("shortstat", Nothing),
        ("since", Value),
        ("skip", Value),
        ("source", Nothing),
        ("staged", Nothing),
        ("stat", Attached),
        ("summary", Nothing),
        ("tags", Attached),
        ("topo-order", Nothing),
        ("unified", Value),
        ("until", Value),
        ("word-diff", Attached),
    ],
};

const GIT_STATUS: Options = Options {
    flags: "bsvz",
    valued: "",
    attached: "u",
    counts: false,
    long: &[
        ("ahead-behind", Nothing),
        ("branch", Nothing),
        ("ignored", Attached),
        ("long", Nothing),
        ("no-ahead-behind", Nothing),
        ("no-renames", Nothing),
        ("porcelain", Attached),
        ("renames", Nothing),
        ("short", Nothing),
        ("show-stash", Nothing),
        ("untracked-files", Attached),
        ("verbose", Nothing),
    ],
};

/// The programs of the table, by bare name.
const PROGRAMS: &[(&str, &Options)] = &[
    ("cat", &CAT),
    ("echo", &ECHO),
    ("grep", &GREP),
    ("head", &HEAD),
    ("ls", &LS),
    ("pwd", &PWD),
    ("rg", &RG),
    ("tail", &TAIL),
    ("wc", &WC),
];

/// The read-only form `words` are in — the program, with git's subcommand (`ls`, `git log`) —
/// or `None`: a program the table does not know, or an option it does not allow.
pub fn form(words: &[Word]) -> Option<String> {
    let (program, args) = words.split_first()?;
    if program.raw != program.text || program.expands {
        // Quoted or escaped: not the plain name a reader takes it for.
        return None;
    }
    let name = program.text.as_str();
    let known = match name {
        "git" => return git(args),
        "find" => find(args),
        "sed" => sed(args),
        _ => PROGRAMS
            .iter()
            .find(|(n, _)| *n == name)
            .is_some_and(|(_, options)| allowed(options, args)),
    };
    known.then(|| name.to_string())
}

/// `git [--no-pager] status|log|show|diff …`: no other option before the subcommand (`-c`
/// sets any configuration, `-C` and `--git-dir` read another repository's).
fn git(args: &[Word]) -> Option<String> {
    let globals = args
        .iter()
        .take_while(|w| matches!(w.text.as_str(), "--no-pager" | "-P"))
        .count();
    let (sub, rest) = args[globals..].split_first()?;
    let options = match sub.text.as_str() {
        "log" | "show" | "diff" => &GIT_LOG,
        "status" => &GIT_STATUS,
        _ => return None,
    };
    (sub.raw == sub.text && allowed(options, rest)).then(|| format!("git {}", sub.text))
}

/// `find`'s options before its starting points.
const FIND_START: &[&str] = &["-H", "-L", "-P"];
/// `find`'s tests and printing actions without a value.
const FIND_TESTS: &[&str] = &[
    "!",
    "-a",
    "-and",
    "-daystart",
    "-depth",
    "-empty",
    "-executable",
    "-false",
    "-follow",
    "-ls",
    "-mount",
    "-nogroup",
    "-noleaf",
    "-not",
    "-nouser",
    "-o",
    "-or",
    "-print",
    "-print0",
    "-prune",
    "-quit",
    "-readable",
    "-true",
    "-writable",
    "-xdev",
];
/// `find`'s tests with a value (the next word, whatever it is).
const FIND_WITH_VALUE: &[&str] = &[
    "-amin",
    "-anewer",
    "-atime",
    "-cmin",
    "-cnewer",
    "-ctime",
    "-gid",
    "-group",
    "-ilname",
    "-iname",
    "-inum",
    "-ipath",
    "-iregex",
    "-iwholename",
    "-links",
    "-lname",
    "-maxdepth",
    "-mindepth",
    "-mmin",
    "-mtime",
    "-name",
    "-newer",
    "-path",
    "-perm",
    "-printf",
    "-regex",
    "-regextype",
    "-samefile",
    "-size",
    "-type",
    "-uid",
    "-used",
    "-user",
    "-wholename",
    "-xtype",
];

/// `find` whose expression only tests and prints: no `-exec`, `-execdir`, `-ok`, `-okdir`,
/// `-delete`, nor the `-fprint…` and `-fls` that write files.
fn find(args: &[Word]) -> bool {
    let mut words = args.iter().peekable();
    while words
        .next_if(|w| FIND_START.contains(&w.text.as_str()))
        .is_some()
    {}
    // The starting points, then the expression.
    while let Some(w) = words.next_if(|w| !w.text.starts_with('-') && w.text != "!") {
        if w.expands {
            return false;
        }
    }
    while let Some(w) = words.next() {
        let t = w.text.as_str();
        if w.expands {
            return false;
        }
        if FIND_TESTS.contains(&t) {
            continue;
        }
        if !FIND_WITH_VALUE.contains(&t) || words.next().is_none_or(|v| v.expands) {
            return false;
        }
    }
    true
}

/// `sed -n` printing lines by number (`sed -n 5p`, `sed -n '10,20p' f`): any other script may
/// write files (`w`) or run commands (`e`).
fn sed(args: &[Word]) -> bool {
    let prints_lines = |script: &str| {
        script.strip_suffix('p').is_some_and(|range| {
            let mut ends = range.splitn(2, ',');
            ends.all(|n| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()))
        })
    };
    let mut quiet = false;
    let mut scripts = 0;
    let mut words = args.iter();
    let mut operands = Vec::new();
    while let Some(w) = words.next() {
        if w.expands {
            return false;
        }
        match w.text.as_str() {
            "-n" | "--quiet" | "--silent" => quiet = true,
            "-e" | "--expression" => match words.next() {
                Some(s) if prints_lines(&s.text) => scripts += 1,
                _ => return false,
            },
            "-E" | "-r" | "--regexp-extended" | "-s" | "--separate" => {}
            t if t.starts_with('-') && t != "-" => return false,
            t => operands.push(t),
        }
    }
    if scripts == 0 {
        match operands.first() {
            Some(s) if prints_lines(s) => scripts = 1,
            _ => return false,
        }
    }
    quiet && scripts > 0
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::super::words::split;
    use super::*;

    fn form_of(command: &str) -> Option<String> {
        form(&split(command).unwrap())
    }

    /// Every command in `yes` is in the form `name`; every one in `no` is in none.
    fn check(name: &str, yes: &[&str], no: &[&str]) {
        for command in yes {
            assert_eq!(form_of(command).as_deref(), Some(name), "{command}");
        }
        for command in no {
            assert_eq!(form_of(command), None, "{command}");
        }
    }

    /// Commands that use one option of `options` each, in every way it may be written.
    fn each_option(program: &str, options: &Options) -> Vec<String> {
        let mut commands = Vec::new();
        for c in options.flags.chars() {
            commands.push(format!("{program} -{c} x"));
        }
        for c in options.valued.chars() {
            commands.push(format!("{program} -{c} 1 x"));
            commands.push(format!("{program} -{c}1 x"));
        }
        for c in options.attached.chars() {
            commands.push(format!("{program} -{c} x"));
            commands.push(format!("{program} -{c}1 x"));
        }
        if options.counts {
            commands.push(format!("{program} -12 x"));
        }
        for (name, takes) in options.long {
            match takes {
                Nothing => commands.push(format!("{program} --{name} x")),
                Value => {
                    commands.push(format!("{program} --{name}=1 x"));
                    commands.push(format!("{program} --{name} 1 x"));
                }
                Attached => {
                    commands.push(format!("{program} --{name} x"));
                    commands.push(format!("{program} --{name}=1 x"));
                }
            }
        }
        commands
    }

    #[test]
    fn every_option_of_the_table_keeps_the_form() {
        let mut tables: Vec<(String, &Options)> = PROGRAMS
            .iter()
            .map(|(name, options)| (name.to_string(), *options))
            .collect();
        for sub in ["log", "show", "diff"] {
            tables.push((format!("git {sub}"), &GIT_LOG));
        }
        tables.push(("git status".to_string(), &GIT_STATUS));
        for (program, options) in tables {
            let commands = each_option(&program, options);
            assert!(commands.len() > 1, "{program}");
            for command in commands {
                assert_eq!(form_of(&command), Some(program.clone()), "{command}");
            }
        }
        for test in FIND_TESTS {
            assert_eq!(
                form_of(&format!("find . {test}")).as_deref(),
                Some("find"),
                "{test}"
            );
        }
        for test in FIND_WITH_VALUE {
            let command = format!("find . {test} -1");
            assert_eq!(form_of(&command).as_deref(), Some("find"), "{command}");
        }
        for start in FIND_START {
            let command = format!("find {start} . -print");
            assert_eq!(form_of(&command).as_deref(), Some("find"), "{command}");
        }
    }

    #[test]
    fn options_that_run_or_write_void_the_form() {
        let voiding = [
            "git log --output=/tmp/x",
            "git log --output /tmp/x",
            "git diff --output=/tmp/x",
            "git show --output=/tmp/x",
            "git log --ext-diff",
            "git diff --textconv",
            "git log --show-signature",
            "git -c alias.x='!touch f' x",
            "git -c core.pager=sh log",
            "git --exec-path=/tmp log",
            "git -C /elsewhere log",
            "git --git-dir=/elsewhere/.git log",
            "git --work-tree=/elsewhere status",
            "git --config-env=core.pager=X log",
            "find . -exec touch f ;",
            "find . -execdir touch f +",
            "find . -ok touch f ;",
            "find . -okdir touch f ;",
            "find . -delete",
            "find . -fprint /tmp/x",
            "find . -fprint0 /tmp/x",
            "find . -fprintf /tmp/x %p",
            "find . -fls /tmp/x",
            "rg --pre sh x",
            "rg --pre=sh x",
            "rg --pre-glob '*' x",
            "rg -z x",
            "rg --search-zip x",
            "rg --hostname-bin=sh x",
            "sed -n 'e touch f' x",
            "sed -n '1w /tmp/x' x",
            "sed -n 's/a/b/w /tmp/x' x",
            "sed -n -i 1p x",
            "sed -i -n 1p x",
            "tail -f x",
            "wc --files0-from=list",
        ];
        for command in voiding {
            assert_eq!(form_of(command), None, "{command}");
        }
    }

    #[test]
    fn git_log_show_and_diff_allow_their_reading_options_only() {
        check(
            "git log",
            &[
                "git log",
                "git log -1 --format=%H",
                "git log -n 5 --oneline --graph --decorate",
                "git log -5 --stat --author=ann --since=2.weeks -- src/*.rs",
                "git log --format '%h %s' -p -U3 -M50% main..HEAD",
                "git --no-pager log --name-only",
                "git log -S needle -G re --color=always --no-ext-diff",
            ],
            &[
                "git log --output=/tmp/x",
                "git log -1 --format=%H --output /tmp/x",
                "git log --ext-diff",
                "git log --textconv",
                "git log --show-signature",
                "git log --exec-path=/tmp",
                "git log -n --output=x",
                "git log --outp=x",
                "git log *",
            ],
        );
        check(
            "git diff",
            &[
                "git diff",
                "git diff --cached --stat",
                "git diff HEAD~1 -- a.rs",
            ],
            &[
                "git diff --output=x",
                "git diff --ext-diff",
                "git diff --no-index --output=x a b",
            ],
        );
        check(
            "git show",
            &["git show HEAD:src/main.rs", "git show --name-only HEAD"],
            &["git show --output=x"],
        );
        check(
            "git status",
            &[
                "git status",
                "git status -sb",
                "git status --porcelain=v2 -uno",
            ],
            &["git status --output=x", "git status -c"],
        );
    }

    #[test]
    fn git_options_before_the_subcommand_void_the_form() {
        check(
            "",
            &[],
            &[
                "git -c alias.x='!touch f' x",
                "git -c core.pager=sh log",
                "git -C /elsewhere log",
                "git --git-dir=/elsewhere/.git log",
                "git --exec-path=/tmp log",
                "git x",
                "git push",
                "git commit -m x",
                "git",
                "git 'log'",
            ],
        );
    }

    #[test]
    fn find_allows_tests_and_printing_not_actions() {
        check(
            "find",
            &[
                "find",
                "find . -name '*.rs'",
                "find -L src tests -type f -mtime -1 -size +10k -print0",
                "find . ! -path './target/*' -maxdepth 2 -printf '%p\\n' -ls",
            ],
            &[
                "find . -exec rm {} +",
                "find . -execdir ls",
                "find . -ok ls",
                "find . -okdir ls",
                "find . -delete",
                "find . -fprintf /tmp/x %p",
                "find . -fprint /tmp/x",
                "find . -fprint0 /tmp/x",
                "find . -fls /tmp/x",
                "find * -name x",
                "find . -name *.rs",
                "find . -name",
            ],
        );
    }

    #[test]
    fn sed_prints_lines_by_number_only() {
        check(
            "sed",
            &[
                "sed -n 5p f",
                "sed -n '10,20p' a b",
                "sed -n -e 1p -e 3,4p f",
            ],
            &[
                "sed 5p f",
                "sed -n 'e touch x' f",
                "sed -n '1w /tmp/x' f",
                "sed -n 's/a/b/w /tmp/x' f",
                "sed -n -i 1p f",
                "sed -n p f",
                "sed -n 1p *",
            ],
        );
    }

    #[test]
    fn grep_and_rg_allow_searching_not_preprocessors() {
        check(
            "grep",
            &[
                "grep -rn foo src",
                "grep -e foo -C2 src",
                "grep -E 'a.b' -m 3 --include='*.rs' -r .",
                "grep -3 --color foo f",
            ],
            &["grep --foo x", "grep x *", "grep -e"],
        );
        check(
            "rg",
            &[
                "rg foo",
                "rg -n -i -g '*.rs' --hidden foo src",
                "rg -uu --type rust -C 2 foo",
            ],
            &[
                "rg --pre sh foo",
                "rg --pre=sh foo",
                "rg --pre-glob '*' foo",
                "rg -z foo",
                "rg --search-zip foo",
                "rg --hostname-bin=x foo",
                "rg foo *",
            ],
        );
    }

    #[test]
    fn the_small_programs_allow_their_options() {
        check(
            "ls",
            &["ls", "ls -la src", "ls -lhS --color=never -I target ."],
            &["ls *.rs", "ls --dired-x", "ls -j"],
        );
        check(
            "cat",
            &["cat -n a b", "cat --show-all a", "cat -"],
            &["cat -Q a"],
        );
        check(
            "head",
            &[
                "head -n 5 f",
                "head -5 f",
                "head -c10 f",
                "head --lines=3 f",
            ],
            &["head -n -5 f", "head -n", "head --follow f"],
        );
        check(
            "tail",
            &["tail -n 20 f", "tail -20 f"],
            &["tail -f f", "tail -F f", "tail --follow f"],
        );
        check(
            "wc",
            &["wc -l a", "wc --words a"],
            &["wc --files0-from=list"],
        );
        check("pwd", &["pwd", "pwd -P"], &["pwd -x"]);
        check("echo", &["echo hello world", "echo -n x"], &["echo --help"]);
    }

    #[test]
    fn a_program_is_known_by_its_bare_name_only() {
        check(
            "",
            &[],
            &[
                "./ls",
                "/bin/ls -la",
                "/usr/bin/git log",
                "'ls' -la",
                "\\ls",
                "env ls",
                "/usr/bin/env git log",
                "sudo ls",
                "timeout 5 git log",
                "xargs cat",
                "sh -c ls",
                "python3 -c 1",
                "cargo test",
                "pytest -x",
            ],
        );
    }
}
