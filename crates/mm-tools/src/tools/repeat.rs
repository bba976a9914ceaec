//! The loop detector: the same tool with the same arguments, again and again (docs/engine.md).

use serde_json::Value;

/// What the detector says of a call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    Run,
    /// Not run: the model receives this text.
    Block(String),
    /// The model repeated the call after the warning: the turn ends with this line.
    EndTurn(String),
}

/// Tracks the streak of identical calls within one turn.
#[derive(Debug, Clone)]
pub struct RepeatDetector {
    max_repeats: u32,
    last: Option<(String, String)>,
    streak: u32,
    warned: bool,
}

impl RepeatDetector {
    pub fn new(max_repeats: u32) -> Self {
        RepeatDetector {
            max_repeats: max_repeats.max(1),
            last: None,
            streak: 0,
            warned: false,
        }
    }

    /// Records a call and says whether it may run. `args` are compared as canonical JSON.
    pub fn check(&mut self, tool: &str, args: &Value) -> Verdict {
        let key = (tool.to_string(), canonical(args));
        if self.last.as_ref() == Some(&key) {
            self.streak += 1;
        } else {
            self.last = Some(key);
            self.streak = 1;
            self.warned = false;
        }
        if self.streak <= self.max_repeats {
            return Verdict::Run;
        }
        if self.warned {
            return Verdict::EndTurn(format!(
                "[stopped: the model kept calling {tool} with the same arguments]"
            ));
        }
        self.warned = true;
        Verdict::Block(format!(
            "[loop detected: {tool} was already called {} times with these arguments; change approach]",
            self.streak - 1
        ))
    }
}

/// JSON with object keys sorted, so `{"a":1,"b":2}` and `{"b":2,"a":1}` compare equal.
pub fn canonical(v: &Value) -> String {
    fn sort(v: &Value) -> Value {
        match v {
            Value::Object(m) => {
                let mut keys: Vec<&String> = m.keys().collect();
                keys.sort();
                let mut out = serde_json::Map::new();
                for k in keys {
                    out.insert(k.clone(), sort(&m[k]));
                }
                Value::Object(out)
            }
            Value::Array(a) => Value::Array(a.iter().map(sort).collect()),
            other => other.clone(),
        }
    }
    sort(v).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn third_repeat_runs_fourth_is_blocked_fifth_ends() {
        let mut d = RepeatDetector::new(3);
        let a = json!({"command": "ls", "x": 1});
        let b = json!({"x": 1, "command": "ls"});
        assert_eq!(d.check("bash", &a), Verdict::Run);
        assert_eq!(d.check("bash", &b), Verdict::Run);
        assert_eq!(d.check("bash", &a), Verdict::Run);
        assert_eq!(
            d.check("bash", &a),
            Verdict::Block(
                "[loop detected: bash was already called 3 times with these arguments; change approach]".into()
            )
        );
        assert_eq!(
            d.check("bash", &a),
            Verdict::EndTurn(
                "[stopped: the model kept calling bash with the same arguments]".into()
            )
        );
    }

    #[test]
    fn another_call_resets_the_streak() {
        let mut d = RepeatDetector::new(2);
        let a = json!({"command": "ls"});
        assert_eq!(d.check("bash", &a), Verdict::Run);
        assert_eq!(d.check("bash", &a), Verdict::Run);
        assert_eq!(d.check("read_file", &json!({"path": "x"})), Verdict::Run);
        assert_eq!(d.check("bash", &a), Verdict::Run);
        assert_eq!(d.check("bash", &a), Verdict::Run);
        assert!(matches!(d.check("bash", &a), Verdict::Block(_)));
    }
}
