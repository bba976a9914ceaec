//! What mm offers beyond the reference (docs/acp.md, "Beyond the reference"): the modes and the
//! configuration options of a session, their updates, and the entries and pages of
//! `session/list`.

use std::path::{Path, PathBuf};

use agent_client_protocol::v1::schema::{
    ConfigOptionUpdate, CurrentModeUpdate, SessionConfigOption, SessionConfigOptionCategory,
    SessionConfigSelectOption, SessionInfo, SessionMode, SessionModeState, SessionUpdate,
};
use serde_json::Value;

use super::updates::wire;

use crate::engine::ModelList;
use crate::event::PermissionMode;

/// The ids of the configuration options.
pub const MODE_OPTION: &str = "mode";
pub const MODEL_OPTION: &str = "model";

/// Sessions in one page of `session/list`.
pub const LIST_PAGE: usize = 50;

/// `modes` of the `session/new`, `session/load` and `session/resume` answers; `fenced`:
/// `read-only` runs commands inside a read-only fence ([`PermissionMode::description`]).
pub fn modes(current: PermissionMode, fenced: bool) -> SessionModeState {
    SessionModeState::new(
        current.id(),
        PermissionMode::ALL
            .iter()
            .map(|m| {
                SessionMode::new(m.id(), m.name()).description(m.description(fenced).to_string())
            })
            .collect(),
    )
}

/// `configOptions`: the mode, then the model once the server's list is known (`models`: the
/// list and the session's model). A server that lists nothing gets no model option.
pub fn config_options(
    mode: PermissionMode,
    fenced: bool,
    models: Option<(&ModelList, &str)>,
) -> Vec<SessionConfigOption> {
    let mode_choices: Vec<SessionConfigSelectOption> = PermissionMode::ALL
        .iter()
        .map(|m| {
            SessionConfigSelectOption::new(m.id(), m.name())
                .description(m.description(fenced).to_string())
        })
        .collect();
    let mut options = vec![
        SessionConfigOption::select(MODE_OPTION, "Mode", mode.id(), mode_choices)
            .description("What runs without asking".to_string())
            .category(SessionConfigOptionCategory::Mode),
    ];
    if let Some((list, current)) = models
        && !list.models.is_empty()
    {
        let mut names = list.models.clone();
        if !current.is_empty() && !names.iter().any(|n| n == current) {
            names.insert(0, current.to_string());
        }
        let current = if current.is_empty() {
            names[0].clone()
        } else {
            current.to_string()
        };
        // A router's models say where they are (loaded, loading, not loaded).
        let choices: Vec<SessionConfigSelectOption> = names
            .iter()
            .map(|n| {
                let choice = SessionConfigSelectOption::new(n.clone(), n.clone());
                match list.status.get(n) {
                    Some(status) => choice.description(status.label().to_string()),
                    None => choice,
                }
            })
            .collect();
        options.push(
            SessionConfigOption::select(MODEL_OPTION, "Model", current, choices)
                .description("The server's model this session asks, from its next turn".to_string())
                .category(SessionConfigOptionCategory::Model),
        );
    }
    options
}

/// `current_mode_update`.
pub fn current_mode_update(mode: PermissionMode) -> Value {
    wire(SessionUpdate::CurrentModeUpdate(CurrentModeUpdate::new(
        mode.id(),
    )))
}

/// `config_option_update` with every option as it now is.
pub fn config_option_update(options: &[SessionConfigOption]) -> Value {
    wire(SessionUpdate::ConfigOptionUpdate(ConfigOptionUpdate::new(
        options.to_vec(),
    )))
}

/// One session of a list: where it is saved, its title, its last change (RFC 3339).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listed {
    pub id: String,
    pub cwd: PathBuf,
    pub title: Option<String>,
    pub updated_at: String,
}

/// The order of a list, newest first: by `updatedAt` as an instant (unreadable ones last), then
/// by id.
fn key(l: &Listed) -> (i64, &str) {
    let secs =
        chrono::DateTime::parse_from_rfc3339(&l.updated_at).map_or(i64::MIN, |t| t.timestamp());
    (secs, l.id.as_str())
}

/// A cursor that `session/list` did not give.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid cursor {0:?}")]
pub struct BadCursor(pub String);

/// One page of `sessions`, newest first, after the session `cursor` names; and the cursor of
/// the next page when there is one. The cursor names the last session given (its time and id),
/// so sessions saved meanwhile do not shift the pages.
pub fn page(
    mut sessions: Vec<Listed>,
    cursor: Option<&str>,
) -> Result<(Vec<Listed>, Option<String>), BadCursor> {
    sessions.sort_by(|a, b| key(b).cmp(&key(a)));
    let start = match cursor {
        None => 0,
        Some(c) => {
            let (secs, id) = c
                .split_once('/')
                .and_then(|(s, id)| Some((s.parse::<i64>().ok()?, id)))
                .ok_or_else(|| BadCursor(c.to_string()))?;
            sessions
                .iter()
                .position(|l| key(l) < (secs, id))
                .unwrap_or(sessions.len())
        }
    };
    let rest = sessions.split_off(start);
    let more = rest.len() > LIST_PAGE;
    let shown: Vec<Listed> = rest.into_iter().take(LIST_PAGE).collect();
    let next = match shown.last() {
        Some(last) if more => {
            let (secs, id) = key(last);
            Some(format!("{secs}/{id}"))
        }
        Some(_) | None => None,
    };
    Ok((shown, next))
}

/// A `SessionInfo` of `session/list`.
pub fn session_info(l: &Listed) -> SessionInfo {
    SessionInfo::new(l.id.clone(), l.cwd.clone())
        .title(l.title.clone())
        .updated_at(l.updated_at.clone())
}

/// `session/resume`.
pub fn log_resumed(id: &str, dir: &Path, messages: usize) -> String {
    format!(
        "[acp] session {id} resumed from {}: {messages} message(s)",
        dir.display()
    )
}

/// `session/close`.
pub fn log_closed(id: &str) -> String {
    format!("[acp] session {id} closed")
}

/// `session/delete`.
pub fn log_deleted(id: &str, dir: &Path) -> String {
    format!("[acp] session {id} deleted from {}", dir.display())
}

/// A file `session/list` could not read (`why` names it).
pub fn log_unlisted(why: &str) -> String {
    format!("[acp] session/list: skipped {why}")
}

/// `session/set_mode`, `session/set_config_option`.
pub fn log_mode(id: &str, mode: PermissionMode) -> String {
    format!("[acp] session {id}: mode {}", mode.id())
}

pub fn log_model(id: &str, model: &str) -> String {
    format!("[acp] session {id}: model {model} from the next turn")
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::engine::ModelStatus;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    #[test]
    fn modes_and_options() {
        assert_eq!(
            serde_json::to_value(modes(PermissionMode::Ask, false)).unwrap(),
            json!({"currentModeId": "ask", "availableModes": [
                {"id": "ask", "name": "Ask", "description": "Ask before every command, file change and other gated tool"},
                {"id": "yolo", "name": "Yolo", "description": "Run every tool without asking"},
                {"id": "read-only", "name": "Read-only", "description": "Read and answer only: commands, file changes and other gated tools are refused (no read-only fence on this system)"},
            ]})
        );
        assert_eq!(
            serde_json::to_value(modes(PermissionMode::Ask, true)).unwrap()["availableModes"][2]["description"],
            "Read and answer only: commands run inside a read-only fence (writes fail); file changes and other gated tools are refused"
        );
        let mode_only =
            serde_json::to_value(config_options(PermissionMode::Yolo, false, None)).unwrap();
        assert_eq!(mode_only.as_array().unwrap().len(), 1);
        assert_eq!(mode_only[0]["id"], "mode");
        assert_eq!(mode_only[0]["type"], "select");
        assert_eq!(mode_only[0]["category"], "mode");
        assert_eq!(mode_only[0]["currentValue"], "yolo");
        assert_eq!(
            mode_only[0]["options"][2],
            json!({"value": "read-only", "name": "Read-only", "description": "Read and answer only: commands, file changes and other gated tools are refused (no read-only fence on this system)"})
        );
        let list = ModelList {
            default: "a".into(),
            models: vec!["a".into(), "b".into()],
            ..ModelList::default()
        };
        let both = serde_json::to_value(config_options(
            PermissionMode::Ask,
            false,
            Some((&list, "b")),
        ))
        .unwrap();
        assert_eq!(
            both[1],
            json!({"id": "model", "name": "Model", "description": "The server's model this session asks, from its next turn",
                   "category": "model", "type": "select", "currentValue": "b",
                   "options": [{"value": "a", "name": "a"}, {"value": "b", "name": "b"}]})
        );
        // A server that lists nothing has no model option; a current model it does not list
        // is offered all the same.
        let none = ModelList::default();
        assert_eq!(
            config_options(PermissionMode::Ask, false, Some((&none, "x"))).len(),
            1
        );
        let other = serde_json::to_value(config_options(
            PermissionMode::Ask,
            false,
            Some((&list, "c")),
        ))
        .unwrap();
        assert_eq!(other[1]["options"][0], json!({"value": "c", "name": "c"}));
        // A router's models say where they are.
        let routed = ModelList {
            status: [
                ("a".to_string(), ModelStatus::Loaded),
                ("b".to_string(), ModelStatus::Loading),
            ]
            .into(),
            ..list.clone()
        };
        let routed = serde_json::to_value(config_options(
            PermissionMode::Ask,
            false,
            Some((&routed, "a")),
        ))
        .unwrap();
        assert_eq!(
            routed[1]["options"],
            json!([{"value": "a", "name": "a", "description": "loaded"},
                   {"value": "b", "name": "b", "description": "loading"}])
        );
        assert_eq!(
            config_option_update(&config_options(PermissionMode::ReadOnly, false, None))["configOptions"]
                [0]["currentValue"],
            "read-only"
        );
        assert_eq!(
            current_mode_update(PermissionMode::ReadOnly),
            json!({"sessionUpdate": "current_mode_update", "currentModeId": "read-only"})
        );
    }

    fn listed(id: &str, at: &str) -> Listed {
        Listed {
            id: id.into(),
            cwd: "/w".into(),
            title: None,
            updated_at: at.into(),
        }
    }

    #[test]
    fn pages_are_newest_first_and_the_cursor_names_the_last_one() {
        let mut all: Vec<Listed> = (0..120)
            .map(|i| {
                listed(
                    &format!("s{i:03}"),
                    &format!("2026-01-01T00:{:02}:{:02}+00:00", i / 60, i % 60),
                )
            })
            .collect();
        all.push(listed("broken", "yesterday"));
        let (first, next) = page(all.clone(), None).unwrap();
        assert_eq!(first.len(), LIST_PAGE);
        assert_eq!(first[0].id, "s119");
        assert_eq!(first[49].id, "s070");
        let next = next.unwrap();
        // A session saved meanwhile does not shift the next page.
        all.push(listed("new", "2026-02-01T00:00:00+00:00"));
        let (second, next) = page(all.clone(), Some(&next)).unwrap();
        assert_eq!(second[0].id, "s069");
        let (third, end) = page(all.clone(), next.as_deref()).unwrap();
        assert_eq!(third.len(), 21);
        assert_eq!(third[19].id, "s000");
        assert_eq!(third[20].id, "broken", "an unreadable time sorts last");
        assert_eq!(end, None);
        assert_eq!(
            page(all, Some("nonsense")),
            Err(BadCursor("nonsense".into()))
        );
        // Times with offsets compare as instants.
        let (p, _) = page(
            vec![
                listed("a", "2026-01-01T10:00:00+02:00"),
                listed("b", "2026-01-01T09:00:00+00:00"),
            ],
            None,
        )
        .unwrap();
        assert_eq!(p[0].id, "b");
    }

    #[test]
    fn a_listed_session_is_its_id_cwd_title_and_time() {
        let mut l = listed("s1", "2026-01-01T00:00:00+00:00");
        assert_eq!(
            serde_json::to_value(session_info(&l)).unwrap(),
            json!({"sessionId": "s1", "cwd": "/w", "updatedAt": "2026-01-01T00:00:00+00:00"})
        );
        l.title = Some("fix the build".into());
        assert_eq!(
            serde_json::to_value(session_info(&l)).unwrap()["title"],
            "fix the build"
        );
    }
}
