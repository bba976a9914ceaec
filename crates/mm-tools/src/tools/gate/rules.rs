//! What the user answered "always" or "never" to in a session, and what each answer covers
//! (docs/engine.md, "Permission gate"): a tool, a command in a read-only form, or one command,
//! word for word.

use super::read_only;
use super::words::{self, chains};
use crate::event::AlwaysRule;

/// Which answer was remembered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    Always,
    Never,
}

/// What a remembered answer covers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Covers {
    /// Every call of the tool.
    Tool,
    /// The commands in this read-only form (`git log`, `ls`: [`read_only::form`]).
    ReadOnly(String),
    /// This command: the same words ([`words::exact`]).
    Exact(String),
}

/// One remembered answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rule {
    pub answer: Answer,
    pub tool: String,
    pub covers: Covers,
}

impl Rule {
    /// Whether this rule is about a call of `tool` whose subject (`Tool::rule_subject`) is
    /// `subject`. "Always" never covers a command that chains, redirects or substitutes;
    /// "never" covers the same words whatever they hold.
    fn covers(&self, tool: &str, subject: Option<&str>) -> bool {
        if self.tool != tool {
            return false;
        }
        match (&self.covers, subject) {
            (Covers::Tool, _) => true,
            (Covers::ReadOnly(form), Some(command)) => {
                !chains(command) && form_of(command).as_ref() == Some(form)
            }
            (Covers::Exact(exact), Some(command)) => {
                let chained = self.answer == Answer::Always && chains(command);
                !chained && words::exact(command) == *exact
            }
            (Covers::ReadOnly(_) | Covers::Exact(_), None) => false,
        }
    }
}

/// A session's remembered answers, in the order they were given (`/permissions` numbers them
/// so).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Rules {
    list: Vec<Rule>,
}

impl Rules {
    pub fn list(&self) -> &[Rule] {
        &self.list
    }

    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    /// Remembers `rule` (once).
    pub fn remember(&mut self, rule: Rule) {
        if !self.list.contains(&rule) {
            self.list.push(rule);
        }
    }

    /// Forgets the `n`th rule (from 1, as listed); `None` when there is none.
    pub fn remove(&mut self, n: usize) -> Option<Rule> {
        (1..=self.list.len())
            .contains(&n)
            .then(|| self.list.remove(n - 1))
    }

    pub fn clear(&mut self) {
        self.list.clear();
    }

    /// The answer remembered for a call of `tool` about `subject`: "never" wins over "always".
    pub fn answer(&self, tool: &str, subject: Option<&str>) -> Option<Answer> {
        let given = |answer| {
            self.list
                .iter()
                .any(|r| r.answer == answer && r.covers(tool, subject))
        };
        [Answer::Never, Answer::Always]
            .into_iter()
            .find(|a| given(*a))
    }
}

/// The read-only form of a command, when it is in one.
fn form_of(command: &str) -> Option<String> {
    words::split(command).and_then(|w| read_only::form(&w))
}

/// What "always" offers for a command: its read-only form (`git log` with the options the
/// table allows), else exactly this command; nothing when it chains, redirects or substitutes
/// (no rule would let it run) or cannot be read.
pub fn rule_of(command: &str) -> AlwaysRule {
    if command.trim().is_empty() || chains(command) {
        return AlwaysRule::Nothing;
    }
    match words::split(command) {
        None => AlwaysRule::Nothing,
        Some(words) => match read_only::form(&words) {
            Some(form) => AlwaysRule::ReadOnly(form),
            None => AlwaysRule::Exact,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn rule(answer: Answer, covers: Covers) -> Rule {
        Rule {
            answer,
            tool: "bash".into(),
            covers,
        }
    }

    fn rules(list: Vec<Rule>) -> Rules {
        Rules { list }
    }

    #[test]
    fn always_offers_a_read_only_form_or_exactly_the_command() {
        let form = |s: &str| AlwaysRule::ReadOnly(s.to_string());
        assert_eq!(rule_of("git log -1 --format=%H"), form("git log"));
        assert_eq!(rule_of("ls -la"), form("ls"));
        assert_eq!(rule_of("find . -name '*.rs'"), form("find"));
        // Not in the table, or not in a form it allows: this command only.
        for command in [
            "git log --output=/tmp/x",
            "git -C dir log",
            "git -c alias.x='!touch f' x",
            "pytest -x tests/",
            "cargo test -p mm",
            "X=1 make",
            "find . -delete",
        ] {
            assert_eq!(rule_of(command), AlwaysRule::Exact, "{command}");
        }
        for command in ["", "  ", "pytest; rm -rf ~", "ls > f", "echo 'open"] {
            assert_eq!(rule_of(command), AlwaysRule::Nothing, "{command}");
        }
    }

    #[test]
    fn runners_interpreters_and_keywords_get_exactly_the_command_by_any_path() {
        for command in [
            "env ls",
            "/usr/bin/env ls",
            "/usr/bin/env git log",
            "sh -c ls",
            "/bin/sh -c ls",
            "bash big.sh",
            "sudo ls",
            "xargs cat",
            "nohup ls",
            "timeout 5 git log",
            "python3 -m pytest",
            "python3 -c 'import os'",
            "node x.js",
            "perl -e 1",
            "ruby x.rb",
            "for f in a b",
            "while true",
            "if true",
            "case x in",
        ] {
            assert_eq!(rule_of(command), AlwaysRule::Exact, "{command}");
        }
    }

    #[test]
    fn a_read_only_rule_lets_only_the_table_s_forms_run() {
        let r = rules(vec![rule(
            Answer::Always,
            Covers::ReadOnly("git log".into()),
        )]);
        let allows = |c: &str| r.answer("bash", Some(c)) == Some(Answer::Always);
        assert!(allows("git log"));
        assert!(allows("git log --oneline -5"));
        assert!(!allows("git log -1 --format=%H --output=/tmp/x"));
        assert!(!allows("git log -1 --format=%H \\-\\-output=/tmp/x"));
        assert!(!allows("git -C /elsewhere log"));
        assert!(!allows("git show"));
        assert!(!allows("git log; rm -rf ~"));
        assert!(!allows("git log | sh"));
        assert!(!allows("/usr/bin/git log"));
        assert!(!allows("env git log"));
        assert_eq!(r.answer("write_file", Some("git log")), None);
    }

    #[test]
    fn an_exact_rule_lets_the_same_words_run_and_nothing_else() {
        let r = rules(vec![rule(
            Answer::Always,
            Covers::Exact(words::exact("make build")),
        )]);
        let allows = |c: &str| r.answer("bash", Some(c)) == Some(Answer::Always);
        assert!(allows("make build"));
        assert!(allows("  make   build "));
        assert!(!allows("make build install"));
        assert!(!allows("make"));
        assert!(!allows("make build; rm -rf ~"));
        assert!(!allows("make 'build'"));
    }

    #[test]
    fn never_holds_for_the_same_words_and_wins_over_always() {
        let r = rules(vec![
            rule(Answer::Always, Covers::ReadOnly("ls".into())),
            rule(Answer::Never, Covers::Exact(words::exact("ls -la /"))),
            rule(
                Answer::Never,
                Covers::Exact(words::exact("pytest; rm -rf ~")),
            ),
        ]);
        assert_eq!(r.answer("bash", Some("ls  -la /")), Some(Answer::Never));
        assert_eq!(r.answer("bash", Some("ls -la")), Some(Answer::Always));
        assert_eq!(
            r.answer("bash", Some("pytest; rm -rf ~")),
            Some(Answer::Never)
        );
        assert_eq!(r.answer("bash", Some("pytest")), None);
        let tool = rules(vec![Rule {
            answer: Answer::Never,
            tool: "write_file".into(),
            covers: Covers::Tool,
        }]);
        assert_eq!(tool.answer("write_file", None), Some(Answer::Never));
        assert_eq!(tool.answer("bash", Some("ls")), None);
    }

    #[test]
    fn rules_are_removed_by_number_or_all_at_once() {
        let mut r = Rules::default();
        let a = rule(Answer::Always, Covers::ReadOnly("ls".into()));
        let b = rule(Answer::Never, Covers::Exact("rm x".into()));
        r.remember(a.clone());
        r.remember(b.clone());
        r.remember(a.clone());
        assert_eq!(r.list(), [a.clone(), b.clone()]);
        assert_eq!(r.remove(0), None);
        assert_eq!(r.remove(3), None);
        assert_eq!(r.remove(1), Some(a));
        assert_eq!(r.list(), [b]);
        r.clear();
        assert!(r.is_empty());
    }
}
