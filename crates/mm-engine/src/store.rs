//! Sessions on disk: written after every change when `sessions.enabled`, loaded by id.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;

use super::{Engine, LoadError, Session};
use crate::event::{Event, Frontend, Usage};
use crate::history::Role;
use mm_core::session::{self, SessionFile};

impl Engine {
    /// The folder of a cwd's session files, canonical; refused when it leads outside the cwd
    /// and the user's own configuration did not choose it (`session::resolve_dir`).
    pub fn sessions_dir(&self, cwd: &Path) -> Result<PathBuf, session::OutsideProject> {
        session::resolve_dir(cwd, &self.config.sessions)
    }

    /// The session as its file holds it.
    pub fn session_file(&self, s: &Session) -> SessionFile {
        SessionFile {
            version: session::VERSION,
            id: s.id.clone(),
            cwd: s.cwd.clone(),
            created_at: s.created_at.clone(),
            updated_at: session::timestamp(chrono::Local::now()),
            title: s.title.clone(),
            mode: Some(s.controls.mode()),
            model: match &s.model {
                Some(m) => m.clone(),
                None => self.detected_model(),
            },
            usage: (&s.usage).into(),
            plan: s.plan.lock().ok().and_then(|p| p.clone()),
            messages: s.history.clone(),
            children: s.children.clone(),
        }
    }

    /// Rewrites the session's file (when sessions are enabled). A file that cannot be written is
    /// a warning: the session stays whole in memory.
    pub fn save(&self, s: &Session, frontend: &dyn Frontend) {
        if !self.config.sessions.enabled {
            return;
        }
        self.write_file(&self.session_file(s), s, frontend);
    }

    fn write_file(&self, file: &SessionFile, s: &Session, frontend: &dyn Frontend) -> bool {
        // A refused folder was said once, when the session opened.
        let Ok(dir) = &s.sessions_dir else {
            return false;
        };
        let new = fs::symlink_metadata(session::file_path(dir, &file.id)).is_err();
        match session::save(dir, file) {
            Ok(_) => {
                // A new file: the folder keeps `sessions.keep` of them.
                if new {
                    self.prune(dir, &file.id, frontend);
                }
                true
            }
            Err(e) => {
                frontend.emit(Event::Warning(format!(
                    "cannot save session {} in {}: {e}",
                    file.id,
                    dir.display()
                )));
                false
            }
        }
    }

    /// Removes the session files of `dir` beyond `sessions.keep` (the one just saved, `id`,
    /// stays); one that cannot be removed is a warning.
    fn prune(&self, dir: &Path, id: &str, frontend: &dyn Frontend) {
        let (_, failed) = session::prune(dir, self.config.sessions.keep, id);
        for why in failed {
            frontend.emit(Event::Warning(format!(
                "cannot remove an old session file in {} (sessions.keep = {}): {why}",
                dir.display(),
                self.config.sessions.keep
            )));
        }
    }

    /// Saves the conversation so far under a new id (`/new` with sessions enabled); `None` when
    /// it was empty or could not be written.
    pub(crate) fn archive(&self, s: &Session, frontend: &dyn Frontend) -> Option<String> {
        if !self.config.sessions.enabled || crate::history::count_without_system(&s.history) == 0 {
            return None;
        }
        let mut file = self.session_file(s);
        file.id = session::new_id(chrono::Local::now());
        self.write_file(&file, s, frontend).then_some(file.id)
    }

    /// Loads a saved session (`session/load`, `mm --resume`): validates the id, reads
    /// `<cwd>/<sessions.dir>/<id>.json`, replaces its system prompt by the current one, restores
    /// totals, plan, title and mode (never looser than the configuration's), continues the `call_N` counter above the highest stored ref, and starts
    /// `sessionStart` hooks. The request's cwd wins over the file's.
    pub async fn load_session(
        &self,
        cwd: PathBuf,
        id: &str,
        frontend: &dyn Frontend,
    ) -> Result<Session, LoadError> {
        session::validate_id(id)?;
        let dir = self.sessions_dir(&cwd)?;
        let file = session::load(&dir, id)?;
        let moved = file.cwd != cwd;
        let highest = file
            .messages
            .iter()
            .flat_map(|m| m.tool_calls.iter())
            .filter_map(|c| {
                c.ref_
                    .strip_prefix("call_")
                    .and_then(|n| n.parse::<u64>().ok())
            })
            .max()
            .unwrap_or(0);
        self.counters.call.fetch_max(highest, Ordering::Relaxed);
        let messages = file
            .messages
            .into_iter()
            .filter(|m| m.role != Role::System)
            .collect();
        // A session file may come with a cloned repository: it never switches asking off.
        let floor = self.configured_mode();
        let mode = file.mode.map_or(floor, |m| m.at_least(floor));
        let mut s = self.open_session(
            super::session::Opening {
                id: file.id,
                cwd,
                sessions_dir: Ok(dir),
                created_at: file.created_at,
                title: file.title,
                mode,
            },
            messages,
            Usage::from(&file.usage),
            file.plan,
        );
        s.children = file.children;
        // The request's cwd wins and is written back; an unchanged session needs no rewrite
        // (the system prompt is rebuilt on every load anyway), which keeps a long load fast.
        if moved {
            self.save(&s, frontend);
        }
        Ok(s)
    }
}
