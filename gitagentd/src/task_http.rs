//! The read-only task view in plain HTTP/1.1 with JSON, on the daemon's
//! own socket, so an editor extension needs no gRPC stack:
//!
//! - `GET /v1/tasks?project_id=<id>`: `{"tasks": [TaskStatus...]}`, newest
//!   first (the gRPC `ListTasks`);
//! - `GET /v1/tasks/<id>`: one `TaskStatus`;
//! - `GET /v1/tasks/<id>/events`: server-sent events, one `status` event
//!   with a `TaskStatus` for the current state and then for every change
//!   (phases, heartbeats), the last one terminal; the stream then ends
//!   (the gRPC `WatchTask`).
//!
//! A `TaskStatus` is [`crate::tasks::TaskStatus`] in JSON: `id`,
//! `command`, `project_id`, `state` (running, succeeded, failed), `phase`,
//! `started_unix_millis`, `updated_unix_millis`, `message`. Errors are
//! `{"error": "..."}`: 400 for bad input, 404 for an unknown task or path,
//! 405 for a method other than GET, 500 when a record cannot be read.
//! hyper parses the requests; the peer's uid was checked on accept.

use crate::tasks::{TaskError, TaskService, TaskStatus};
use bytes::Bytes;
use git_agent_shared::task_record::TaskId;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper::header::{self, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::{mpsc, watch};
use tokio_util::sync::CancellationToken;

type Body = BoxBody<Bytes, Infallible>;

/// How long a client may take to send a request's head.
const HEADER_WAIT: Duration = Duration::from_secs(10);

/// How often the events of a task that another process runs are re-read
/// from its durable record: this daemon has no notifications for it.
const FOREIGN_POLL: Duration = Duration::from_millis(500);

/// Serves one HTTP/1.1 connection until the client closes it, or until
/// shutdown lets the request in flight finish.
pub async fn serve<S>(io: S, tasks: Arc<TaskService>, shutdown: CancellationToken)
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let service = hyper::service::service_fn(move |request| {
        let tasks = Arc::clone(&tasks);
        async move { Ok::<_, Infallible>(respond(&tasks, &request).await) }
    });
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder.timer(TokioTimer::new()).header_read_timeout(HEADER_WAIT);
    let connection = builder.serve_connection(TokioIo::new(io), service);
    tokio::pin!(connection);
    let result = tokio::select! {
        result = connection.as_mut() => result,
        () = shutdown.cancelled() => {
            connection.as_mut().graceful_shutdown();
            connection.await
        }
    };
    if let Err(error) = result {
        tracing::debug!(%error, "an HTTP task view connection failed");
    }
}

/// The route a request path names.
#[derive(Debug, PartialEq, Eq)]
enum Route<'a> {
    List,
    Task(&'a str),
    Events(&'a str),
}

fn route(path: &str) -> Option<Route<'_>> {
    let rest = path.strip_prefix("/v1/tasks")?;
    if rest.is_empty() || rest == "/" {
        return Some(Route::List);
    }
    let rest = rest.strip_prefix('/')?;
    match rest.split_once('/') {
        None => Some(Route::Task(rest)),
        Some((id, "events")) => Some(Route::Events(id)),
        Some(_) => None,
    }
}

async fn respond(tasks: &Arc<TaskService>, request: &Request<Incoming>) -> Response<Body> {
    let Some(route) = route(request.uri().path()) else {
        return error(StatusCode::NOT_FOUND, format!("no such resource {}; see GET /v1/tasks", request.uri().path()));
    };
    if request.method() != Method::GET {
        let mut response = error(
            StatusCode::METHOD_NOT_ALLOWED,
            format!("{} is not allowed; the task view is read-only (GET)", request.method()),
        );
        response.headers_mut().insert(header::ALLOW, HeaderValue::from_static("GET"));
        return response;
    }
    match route {
        Route::List => list(tasks, request.uri().query().unwrap_or_default()).await,
        Route::Task(id) => match status(tasks, id).await {
            Ok((current, _)) => json(StatusCode::OK, &current),
            Err(response) => response,
        },
        Route::Events(id) => match status(tasks, id).await {
            Ok((current, live)) => events(tasks, current, live),
            Err(response) => response,
        },
    }
}

/// Whether `text` has the form of a project id (what `git-agent
/// project_id` prints: 64 lowercase hexadecimal digits).
fn is_project_id(text: &str) -> bool {
    text.len() == 64 && text.bytes().all(|byte| matches!(byte, b'0'..=b'9' | b'a'..=b'f'))
}

async fn list(tasks: &TaskService, query: &str) -> Response<Body> {
    let mut project_id = None;
    for (name, value) in form_urlencoded::parse(query.as_bytes()) {
        match name.as_ref() {
            "project_id" if project_id.is_none() => project_id = Some(value.into_owned()),
            "project_id" => return error(StatusCode::BAD_REQUEST, "project_id is given twice".into()),
            other => {
                return error(
                    StatusCode::BAD_REQUEST,
                    format!("unknown query parameter {other:?}; only project_id is accepted"),
                );
            }
        }
    }
    let Some(project_id) = project_id else {
        return error(
            StatusCode::BAD_REQUEST,
            "project_id is required: GET /v1/tasks?project_id=<the id `git-agent project_id` prints>".into(),
        );
    };
    if !is_project_id(&project_id) {
        return error(
            StatusCode::BAD_REQUEST,
            format!(
                "invalid project_id {project_id:?}: expected the 64 hexadecimal digits `git-agent project_id` prints"
            ),
        );
    }
    match tasks.list(&project_id, None).await {
        Ok(list) => json(StatusCode::OK, &serde_json::json!({ "tasks": list })),
        Err(failure) => task_error(failure),
    }
}

/// The task's status now, and its change notifications when this daemon
/// runs it; or the error response.
async fn status(
    tasks: &TaskService,
    id: &str,
) -> Result<(TaskStatus, Option<watch::Receiver<TaskStatus>>), Response<Body>> {
    if let Err(invalid) = TaskId::parse(id) {
        return Err(error(StatusCode::BAD_REQUEST, git_agent_shared::error_chain::render(&invalid)));
    }
    tasks.watch(id, "", None).await.map_err(task_error)
}

fn task_error(failure: TaskError) -> Response<Body> {
    let message = failure.render();
    match failure {
        TaskError::Usage(_) => error(StatusCode::BAD_REQUEST, message),
        TaskError::NotFound(_) => error(StatusCode::NOT_FOUND, message),
        TaskError::Failed(_) | TaskError::Message(_) => error(StatusCode::INTERNAL_SERVER_ERROR, message),
    }
}

/// The event stream: the current status, then every change until the
/// task is terminal. A task another process runs (no notifications here)
/// is re-read every [`FOREIGN_POLL`].
fn events(tasks: &Arc<TaskService>, current: TaskStatus, live: Option<watch::Receiver<TaskStatus>>) -> Response<Body> {
    let (sender, receiver) = mpsc::channel::<Result<Frame<Bytes>, Infallible>>(16);
    let send = move |status: &TaskStatus| {
        let sender = sender.clone();
        let frame = Frame::data(Bytes::from(sse_event(status)));
        async move { sender.send(Ok(frame)).await.is_ok() }
    };
    let foreign = live.is_none().then(|| (Arc::clone(tasks), current.id.clone()));
    tokio::spawn(async move {
        if !send(&current).await || current.is_terminal() {
            return;
        }
        if let Some(mut live) = live {
            live.mark_unchanged();
            while live.changed().await.is_ok() {
                let status = live.borrow_and_update().clone();
                if !send(&status).await || status.is_terminal() {
                    return;
                }
            }
            return;
        }
        let Some((tasks, id)) = foreign else { return };
        let mut last = current;
        loop {
            tokio::time::sleep(FOREIGN_POLL).await;
            let Ok((status, _)) = tasks.watch(&id, "", None).await else { return };
            if status != last {
                if !send(&status).await || status.is_terminal() {
                    return;
                }
                last = status;
            }
        }
    });
    let body = StreamBody::new(tokio_stream::wrappers::ReceiverStream::new(receiver));
    let mut response = Response::new(BodyExt::boxed(body));
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    response
}

/// One server-sent event carrying a status.
fn sse_event(status: &TaskStatus) -> String {
    // serde_json never writes a raw newline, so the data is one line.
    format!("event: status\ndata: {}\n\n", serde_json::to_string(status).unwrap_or_default())
}

fn json(code: StatusCode, value: &impl serde::Serialize) -> Response<Body> {
    let mut text = serde_json::to_vec(value).unwrap_or_default();
    text.push(b'\n');
    let mut response = Response::new(BodyExt::boxed(Full::new(Bytes::from(text))));
    *response.status_mut() = code;
    response.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
}

fn error(code: StatusCode, message: String) -> Response<Body> {
    json(code, &serde_json::json!({ "error": message }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes() {
        assert_eq!(route("/v1/tasks"), Some(Route::List));
        assert_eq!(route("/v1/tasks/"), Some(Route::List));
        assert_eq!(route("/v1/tasks/ABC"), Some(Route::Task("ABC")));
        assert_eq!(route("/v1/tasks/ABC/events"), Some(Route::Events("ABC")));
        assert_eq!(route("/v1/tasks/ABC/other"), None);
        assert_eq!(route("/v1/tasksX"), None);
        assert_eq!(route("/"), None);
    }

    #[test]
    fn project_ids_are_64_lowercase_hex_digits() {
        assert!(is_project_id(&"a1".repeat(32)));
        assert!(!is_project_id(&"A1".repeat(32)));
        assert!(!is_project_id("abc"));
        assert!(!is_project_id(&"g".repeat(64)));
    }

    #[test]
    fn an_event_is_one_status_line() {
        let status = TaskStatus {
            id: "ID".into(),
            command: "review".into(),
            project_id: "p".into(),
            state: "running".into(),
            phase: "tool:grep\nx".into(),
            started_ms: 1,
            updated_ms: 2,
            message: String::new(),
        };
        let event = sse_event(&status);
        assert_eq!(
            event,
            "event: status\ndata: {\"id\":\"ID\",\"command\":\"review\",\"project_id\":\"p\",\"state\":\"running\",\
             \"phase\":\"tool:grep\\nx\",\"started_unix_millis\":1,\"updated_unix_millis\":2,\"message\":\"\"}\n\n"
        );
    }
}
