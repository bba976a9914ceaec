//! The signals that stop mm, per system: on Unix SIGTERM, SIGHUP and (when asked) SIGINT; on
//! Windows the console's close and Ctrl-Break events and (when asked) Ctrl-C. `watch` installs
//! the handlers before it returns, so a signal that comes at once is never the default action
//! (death without saving); its future gives the exit code of the first one.

use std::future::Future;

#[cfg(unix)]
pub fn watch(sigint: bool) -> std::io::Result<impl Future<Output = i32> + Send + 'static> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut kinds = vec![(SignalKind::terminate(), 143), (SignalKind::hangup(), 129)];
    if sigint {
        kinds.push((SignalKind::interrupt(), 130));
    }
    let mut streams = Vec::new();
    for (kind, code) in kinds {
        streams.push((signal(kind)?, code));
    }
    Ok(async move {
        let waits = streams.iter_mut().map(|(s, code)| {
            let code = *code;
            Box::pin(async move {
                s.recv().await;
                code
            })
        });
        futures::future::select_all(waits).await.0
    })
}

#[cfg(windows)]
pub fn watch(sigint: bool) -> std::io::Result<impl Future<Output = i32> + Send + 'static> {
    use tokio::signal::windows::{ctrl_break, ctrl_c, ctrl_close};
    let mut close = ctrl_close()?;
    let mut brk = ctrl_break()?;
    let mut c = if sigint { Some(ctrl_c()?) } else { None };
    Ok(async move {
        let interrupt = async {
            match c.as_mut() {
                Some(c) => {
                    c.recv().await;
                }
                None => std::future::pending::<()>().await,
            }
        };
        tokio::select! {
            _ = close.recv() => 129,
            _ = brk.recv() => 143,
            () = interrupt => 130,
        }
    })
}
