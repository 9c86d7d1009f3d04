//! The leader's notice of a slow model: explore imposes no deadline on
//! provider requests, so a stalled provider would otherwise look like a
//! hang. Once a model request has been outstanding for [`NOTICE_AFTER`],
//! an interactive stderr shows `explore: waiting for the model (12 s)`,
//! refreshed every second and cleared when the answer comes; any other
//! stderr (or `--debug`) gets that line once per run. It never writes to
//! stdout.

use super::super::Output;
use gitagent_runtime::trace::Event;
use std::sync::{Arc, Mutex};
use std::time::Duration;
// Tokio's clock, so tests can pause it.
use tokio::time::Instant;

/// How long a request runs before explore says it is waiting.
pub const NOTICE_AFTER: Duration = Duration::from_secs(5);
const REFRESH: Duration = Duration::from_secs(1);

/// Watches the agent loop's requests through its trace events.
#[derive(Clone)]
pub struct ModelWait {
    output: Output,
    /// A refreshed progress line rather than one stderr line.
    live: bool,
    state: Arc<Mutex<State>>,
}

#[derive(Default)]
struct State {
    /// When the outstanding request was sent.
    since: Option<Instant>,
    /// The progress line is showing.
    shown: bool,
    /// The one stderr line was written.
    said: bool,
}

impl ModelWait {
    pub fn new(output: Output, stderr_is_terminal: bool, debug: bool) -> Self {
        Self { output, live: stderr_is_terminal && !debug, state: Arc::default() }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Follows the loop: a `request` starts the wait, its `response` ends
    /// it and clears the line.
    pub fn observe(&self, event: &Event) {
        match event.kind.as_str() {
            "request" => self.state().since = Some(Instant::now()),
            "response" => self.end(),
            _ => {}
        }
    }

    /// No request is outstanding any more; the line goes.
    pub fn end(&self) {
        let mut state = self.state();
        state.since = None;
        if state.shown {
            state.shown = false;
            self.output.progress("");
        }
    }

    /// Says the wait once it is long enough: refreshed when live, once
    /// otherwise.
    fn tick(&self) {
        let mut state = self.state();
        let Some(since) = state.since else { return };
        let waited = since.elapsed();
        if waited < NOTICE_AFTER {
            return;
        }
        let text = format!("explore: waiting for the model ({} s)", waited.as_secs());
        if self.live {
            state.shown = true;
            self.output.progress(text);
        } else if !state.said {
            state.said = true;
            self.output.stderr(format!("{text}\n"));
        }
    }

    /// Runs `work`, saying the wait for any request it leaves outstanding
    /// too long; the line is gone once `work` ends.
    pub async fn around<T>(&self, work: impl Future<Output = T>) -> T {
        tokio::pin!(work);
        let result = loop {
            tokio::select! {
                result = &mut work => break result,
                () = tokio::time::sleep(REFRESH) => self.tick(),
            }
        };
        self.end();
        result
    }
}

#[cfg(test)]
mod tests {
    use super::super::super::Event as Sent;
    use super::*;

    fn sent(rx: &mut tokio::sync::mpsc::UnboundedReceiver<Sent>) -> Vec<Sent> {
        std::iter::from_fn(|| rx.try_recv().ok()).collect()
    }

    #[tokio::test(start_paused = true)]
    async fn a_terminal_sees_a_refreshed_line_cleared_by_the_answer() {
        let (output, mut rx) = Output::new();
        let wait = ModelWait::new(output, true, false);
        let watched = wait.clone();
        wait.around(async move {
            watched.observe(&Event::new("request"));
            tokio::time::sleep(Duration::from_millis(7_500)).await;
            watched.observe(&Event::new("response"));
            // The tools of the step run without a line.
            tokio::time::sleep(Duration::from_secs(10)).await;
        })
        .await;
        assert_eq!(
            sent(&mut rx),
            [
                Sent::Progress("explore: waiting for the model (5 s)".into()),
                Sent::Progress("explore: waiting for the model (6 s)".into()),
                Sent::Progress("explore: waiting for the model (7 s)".into()),
                Sent::Progress(String::new()),
            ]
        );
    }

    #[tokio::test(start_paused = true)]
    async fn elsewhere_one_line_is_written_once_per_run() {
        let (output, mut rx) = Output::new();
        let wait = ModelWait::new(output, false, false);
        let watched = wait.clone();
        wait.around(async move {
            for _ in 0..2 {
                watched.observe(&Event::new("request"));
                tokio::time::sleep(Duration::from_secs(8)).await;
                watched.observe(&Event::new("response"));
            }
            // A quick request says nothing.
            watched.observe(&Event::new("request"));
        })
        .await;
        assert_eq!(sent(&mut rx), [Sent::Stderr(b"explore: waiting for the model (5 s)\n".to_vec())]);
    }

    #[tokio::test(start_paused = true)]
    async fn a_failed_request_leaves_no_line_behind() {
        let (output, mut rx) = Output::new();
        let wait = ModelWait::new(output, true, false);
        let watched = wait.clone();
        wait.around(async move {
            watched.observe(&Event::new("request"));
            tokio::time::sleep(Duration::from_millis(5_500)).await;
        })
        .await;
        let events = sent(&mut rx);
        assert_eq!(events.last(), Some(&Sent::Progress(String::new())), "{events:?}");
    }
}
