//! What mm offers beyond the reference's methods (docs/acp.md, "Beyond the reference"): modes
//! and configuration options (`session/set_mode`, `session/set_config_option`), closing a
//! session, and the saved sessions' history (`session/list`, `session/resume`,
//! `session/delete`, only with `sessions.enabled`).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::Ordering;

use agent_client_protocol::v1::schema::{
    CloseSessionRequest, CloseSessionResponse, DeleteSessionRequest, DeleteSessionResponse,
    ListSessionsRequest, ListSessionsResponse, ResumeSessionRequest, ResumeSessionResponse,
    SessionConfigOption, SetSessionConfigOptionRequest, SetSessionConfigOptionResponse,
    SetSessionModeRequest, SetSessionModeResponse,
};
use agent_client_protocol::v1::{ConnectionTo, Responder};
use agent_client_protocol::{Client, Error};

use super::convert::{self, RequestError};
use super::{SHUTDOWN_GRACE, Server, Slot};
use crate::event::PermissionMode;
use crate::server::Tail;

impl Server {
    /// The session's configuration options as they are now: its mode, and its model once the
    /// server's list is known (which marks the model option as shown).
    pub(super) fn config_options(&self, slot: &Slot) -> Vec<SessionConfigOption> {
        let mode = slot.controls.mode();
        let fenced = self.engine.read_only_runs_commands();
        match self.engine.model.models_now() {
            Some(list) if !list.models.is_empty() => {
                slot.models_shown.store(true, Ordering::Relaxed);
                if let Ok(mut shown) = slot.statuses_shown.lock() {
                    shown.clone_from(&list.status);
                }
                let current = slot
                    .controls
                    .model()
                    .unwrap_or_else(|| list.default.clone());
                convert::config_options(mode, fenced, Some((&list, &current)))
            }
            Some(_) | None => convert::config_options(mode, fenced, None),
        }
    }

    /// Once the server's models are known (detection runs after `initialize` and may end after
    /// the session's answer), a `config_option_update` with the model option.
    pub(super) fn show_models_later(self: &Arc<Self>, slot: &Arc<Slot>) {
        if slot.models_shown.load(Ordering::Relaxed) {
            return;
        }
        let (server, slot) = (self.clone(), slot.clone());
        let cancel = self.shutdown.child_token();
        self.tasks.spawn(async move {
            if server.engine.model.models(&cancel).await.is_ok() {
                server.show_models_now(&slot);
            }
        });
    }

    /// Sends the model option if the list is known and the session has not been shown it.
    pub(super) fn show_models_now(&self, slot: &Slot) {
        let listed = self
            .engine
            .model
            .models_now()
            .is_some_and(|l| !l.models.is_empty());
        let live = self
            .slot(&slot.frontend.session_id())
            .is_some_and(|s| std::ptr::eq(Arc::as_ptr(&s), slot));
        if !listed || !live || slot.models_shown.swap(true, Ordering::Relaxed) {
            return;
        }
        let options = self.config_options(slot);
        slot.frontend
            .update(convert::config_option_update(&options));
    }

    /// After a turn, on a llama.cpp router: its models' statuses asked again, and the model
    /// option sent again when they changed (the model the turn loaded is `loaded` now).
    pub(super) async fn show_statuses_now(&self, slot: &Slot) {
        let shown = slot
            .statuses_shown
            .lock()
            .map(|s| s.clone())
            .unwrap_or_default();
        if shown.is_empty() || !slot.models_shown.load(Ordering::Relaxed) {
            return;
        }
        let cancel = self.shutdown.child_token();
        match self.engine.model.models(&cancel).await {
            Ok(list) if list.status != shown => {
                let options = self.config_options(slot);
                slot.frontend
                    .update(convert::config_option_update(&options));
            }
            Ok(_) | Err(_) => {}
        }
    }

    /// Switches a session's mode (from its next tool call) and saves it if no turn runs (a
    /// running turn saves it when it ends).
    fn switch_mode(&self, slot: &Arc<Slot>, mode: PermissionMode) {
        if !slot.controls.set_mode(mode) {
            return;
        }
        let id = slot.frontend.session_id();
        self.log.line(&convert::log_mode(&id, mode));
        if !self.config.sessions.enabled {
            return;
        }
        let (engine, slot) = (self.engine.clone(), slot.clone());
        self.tasks.spawn(async move {
            if let Ok(session) = slot.session.try_lock() {
                engine.save(&session, &*slot.frontend);
            }
        });
    }

    fn live(&self, id: &str) -> Result<Arc<Slot>, Error> {
        self.slot(id).ok_or_else(|| {
            convert::request_error(Some(id), &RequestError::UnknownSession(id.to_string()))
        })
    }

    pub(super) fn set_mode(
        &self,
        req: SetSessionModeRequest,
        responder: Responder<SetSessionModeResponse>,
    ) -> Result<(), Error> {
        let id = req.session_id.0.to_string();
        let slot = match self.live(&id) {
            Ok(slot) => slot,
            Err(e) => return responder.respond_with_error(e),
        };
        let Some(mode) = PermissionMode::parse(&req.mode_id.0) else {
            let e = RequestError::UnknownMode(req.mode_id.0.to_string());
            return responder.respond_with_error(convert::request_error(Some(&id), &e));
        };
        self.switch_mode(&slot, mode);
        responder.respond(SetSessionModeResponse::new())?;
        // The mode is a configuration option too: both say the same.
        slot.frontend.update(convert::current_mode_update(mode));
        let options = self.config_options(&slot);
        slot.frontend
            .update(convert::config_option_update(&options));
        Ok(())
    }

    pub(super) fn set_config_option(
        &self,
        req: SetSessionConfigOptionRequest,
        responder: Responder<SetSessionConfigOptionResponse>,
    ) -> Result<(), Error> {
        let id = req.session_id.0.to_string();
        let slot = match self.live(&id) {
            Ok(slot) => slot,
            Err(e) => return responder.respond_with_error(e),
        };
        let option = req.config_id.0.to_string();
        let value = req.value.as_value_id().map(|v| v.0.to_string());
        let refuse = |e: RequestError| convert::request_error(Some(&id), &e);
        let unknown_value = || RequestError::UnknownValue {
            option: option.clone(),
            value: match (&value, req.value.as_bool()) {
                (Some(v), _) => v.clone(),
                (None, Some(b)) => b.to_string(),
                (None, None) => String::new(),
            },
        };
        match option.as_str() {
            convert::MODE_OPTION => {
                let Some(mode) = value.as_deref().and_then(PermissionMode::parse) else {
                    return responder.respond_with_error(refuse(unknown_value()));
                };
                self.switch_mode(&slot, mode);
                responder.respond(SetSessionConfigOptionResponse::new(
                    self.config_options(&slot),
                ))?;
                slot.frontend.update(convert::current_mode_update(mode));
                Ok(())
            }
            convert::MODEL_OPTION => {
                let listed = self.engine.model.models_now().unwrap_or_default();
                let Some(model) = value.clone().filter(|v| listed.models.contains(v)) else {
                    return responder.respond_with_error(refuse(unknown_value()));
                };
                if slot.controls.set_model(&model) {
                    self.log.line(&convert::log_model(&id, &model));
                }
                responder.respond(SetSessionConfigOptionResponse::new(
                    self.config_options(&slot),
                ))
            }
            _ => responder.respond_with_error(refuse(RequestError::UnknownOption(option.clone()))),
        }
    }

    /// Takes a session out of the live ones.
    fn unregister(&self, id: &str) -> Option<Arc<Slot>> {
        self.sessions.lock().ok().and_then(|mut s| s.remove(id))
    }

    /// Frees a session taken out of the live ones: its running and waiting prompts are
    /// cancelled (they answer `cancelled`), and once its turn has ended (at most
    /// [`SHUTDOWN_GRACE`]; else it goes when the turn does) what it holds is let go: its tools'
    /// processes (asked agents), its share of the MCP servers.
    async fn free(&self, slot: Arc<Slot>) {
        slot.cancel_all();
        if let Ok(mut session) = tokio::time::timeout(SHUTDOWN_GRACE, slot.session.lock()).await {
            self.engine.close_session(&mut session);
        }
    }

    pub(super) async fn close_session(
        self: Arc<Self>,
        req: CloseSessionRequest,
        responder: Responder<CloseSessionResponse>,
    ) {
        let id = req.session_id.0.to_string();
        let Some(slot) = self.unregister(&id) else {
            let e = RequestError::UnknownSession(id.clone());
            let _ = responder.respond_with_error(convert::request_error(Some(&id), &e));
            return;
        };
        self.free(slot).await;
        self.log.line(&convert::log_closed(&id));
        let _ = responder.respond(CloseSessionResponse::new());
    }

    /// The cwds of the live sessions, then the process's, without repeats.
    fn live_cwds(&self) -> Vec<PathBuf> {
        let mut cwds: Vec<PathBuf> = self
            .sessions
            .lock()
            .map(|s| s.values().map(|slot| slot.cwd.clone()).collect())
            .unwrap_or_default();
        cwds.extend(self.process_cwd.clone());
        dedup(cwds)
    }

    pub(super) async fn list_sessions(
        self: Arc<Self>,
        req: ListSessionsRequest,
        responder: Responder<ListSessionsResponse>,
    ) {
        let cwds = match req.cwd {
            Some(cwd) if !cwd.is_absolute() => {
                let e = RequestError::CwdNotAbsolute(cwd);
                let _ = responder.respond_with_error(convert::request_error(None, &e));
                return;
            }
            Some(cwd) => {
                if let Ok(mut listed) = self.listed_cwds.lock()
                    && !listed.contains(&cwd)
                {
                    listed.push(cwd.clone());
                }
                vec![cwd]
            }
            None => self.live_cwds(),
        };
        let shared = self.config.sessions.dir.is_absolute();
        let dirs: Vec<_> = cwds
            .into_iter()
            .map(|cwd| {
                let dir = self.engine.sessions_dir(&cwd);
                (cwd, dir)
            })
            .collect();
        // A list reads a few kilobytes of each file: off the runtime's threads all the same.
        let read = self
            .tasks
            .spawn_blocking(move || read_lists(&dirs, shared))
            .await;
        let (found, skipped) = read.unwrap_or_default();
        for why in &skipped {
            self.log.line(&convert::log_unlisted(why));
        }
        match convert::page(found, req.cursor.as_deref()) {
            Ok((shown, next)) => {
                let infos = shown.iter().map(convert::listed_info).collect();
                let _ = responder.respond(ListSessionsResponse::new(infos).next_cursor(next));
            }
            Err(e) => {
                let e = RequestError::BadCursor(e);
                let _ = responder.respond_with_error(convert::request_error(None, &e));
            }
        }
    }

    pub(super) async fn resume_session(
        self: Arc<Self>,
        req: ResumeSessionRequest,
        responder: Responder<ResumeSessionResponse>,
        cx: ConnectionTo<Client>,
    ) {
        let id = req.session_id.0.to_string();
        let frontend = self.frontend(&cx);
        let session = match self
            .open_saved(&id, &req.cwd, &req.mcp_servers, &frontend)
            .await
        {
            Ok(s) => s,
            Err(e) => {
                let _ = responder.respond_with_error(e);
                return;
            }
        };
        let view = session.view();
        // Loaded from it, so resolved and inside.
        let dir = view.sessions_dir().clone().unwrap_or_default();
        // No replay: the client has the conversation. What a session shows besides it comes
        // after the answer, as for `session/new`.
        let mut after = vec![self.commands_update(view.skills())];
        after.extend(view.plan().map(|plan| convert::plan_update(&plan)));
        after.push(convert::usage_update(self.engine.context_usage(&session)));
        after.extend(view.title().map(convert::session_info));
        let tail = Tail {
            named: true,
            log: Some(convert::log_resumed(&id, &dir, view.messages())),
            after,
            save: false,
        };
        self.open_slot(
            session,
            &frontend,
            responder,
            |modes, options| {
                ResumeSessionResponse::new()
                    .modes(modes)
                    .config_options(options)
            },
            tail,
        );
    }

    pub(super) async fn delete_session(
        self: Arc<Self>,
        req: DeleteSessionRequest,
        responder: Responder<DeleteSessionResponse>,
    ) {
        let id = req.session_id.0.to_string();
        if let Err(e) = crate::session::validate_id(&id) {
            let e = crate::engine::LoadError::InvalidId(e);
            let _ = responder.respond_with_error(convert::load_error(&id, &e));
            return;
        }
        // A live session is closed first; its file is in its cwd.
        let cwds = match self.unregister(&id) {
            Some(slot) => {
                let cwd = slot.cwd.clone();
                self.free(slot).await;
                self.log.line(&convert::log_closed(&id));
                vec![cwd]
            }
            None => {
                let mut cwds = self.live_cwds();
                if let Ok(listed) = self.listed_cwds.lock() {
                    cwds.extend(listed.iter().cloned());
                }
                dedup(cwds)
            }
        };
        // A folder that leads outside the cwd holds nothing of this project's to delete.
        let dirs: Vec<PathBuf> = cwds
            .iter()
            .filter_map(|c| self.engine.sessions_dir(c).ok())
            .collect();
        for dir in &dirs {
            if !crate::session::file_path(dir, &id).is_file() {
                continue;
            }
            match crate::session::delete(dir, &id) {
                Ok(()) => {
                    self.log.line(&convert::log_deleted(&id, dir));
                    let _ = responder.respond(DeleteSessionResponse::new());
                }
                Err(e) => {
                    let e = crate::engine::LoadError::File(e);
                    let _ = responder.respond_with_error(convert::load_error(&id, &e));
                }
            }
            return;
        }
        let e = RequestError::NotSaved {
            id: id.clone(),
            dirs: dirs.iter().map(|d| d.display().to_string()).collect(),
        };
        let _ = responder.respond_with_error(convert::request_error(Some(&id), &e));
    }
}

fn dedup(paths: Vec<PathBuf>) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = Vec::with_capacity(paths.len());
    for p in paths {
        if !out.contains(&p) {
            out.push(p);
        }
    }
    out
}

/// The saved sessions of these cwds (each in its resolved folder, each file read up to its
/// messages), and the files that could not be read (a refused folder among them). A folder every
/// cwd shares (`shared`: an absolute `sessions.dir`) is read once, and lists for each cwd the
/// sessions that were last in it.
fn read_lists(
    dirs: &[(PathBuf, Result<PathBuf, crate::session::OutsideProject>)],
    shared: bool,
) -> (Vec<convert::Listed>, Vec<String>) {
    let listed = |cwd: &Path, h: crate::session::SessionHeader| convert::Listed {
        id: h.id,
        cwd: cwd.to_path_buf(),
        title: h.title,
        updated_at: h.updated_at,
    };
    let mut found = Vec::new();
    let mut skipped = Vec::new();
    let mut read: Vec<&Path> = Vec::new();
    let cwds: Vec<&PathBuf> = dirs.iter().map(|(cwd, _)| cwd).collect();
    for (cwd, dir) in dirs {
        let dir = match dir {
            Ok(dir) => dir,
            Err(outside) => {
                skipped.push(outside.to_string());
                continue;
            }
        };
        if !shared {
            let (headers, unreadable) = crate::session::headers(dir);
            found.extend(headers.into_iter().map(|h| listed(cwd, h)));
            skipped.extend(unreadable);
        } else if !read.contains(&dir.as_path()) {
            read.push(dir);
            let (headers, unreadable) = crate::session::headers(dir);
            found.extend(
                headers
                    .into_iter()
                    .filter(|h| cwds.contains(&&h.cwd))
                    .map(|h| listed(&h.cwd.clone(), h)),
            );
            skipped.extend(unreadable);
        }
    }
    (found, skipped)
}
