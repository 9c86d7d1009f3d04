//! `--debug` timings: `explore.phase` events with the phase, its
//! `duration_ms` and the `elapsed_ms` since command entry (plus the model
//! `step`, and the `tool` of individual tool timings). Each process
//! reports only the work it owns: every process its setup, reservation,
//! semantic search and batch join; the batch's leader the join grace,
//! collection, provider, tool, validation, repair, answer and persistence
//! phases (and the deferred index synchronization); a follower its
//! `result_wait`.
//! Without `--debug` the reporter drops them; they never touch stdout.

use super::super::generation::TraceSink;
use gitagent_runtime::trace::Event;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The phase clock of one process.
#[derive(Clone)]
pub struct Phases {
    started: Instant,
    sink: TraceSink,
}

impl Phases {
    pub fn new(started: Instant, sink: TraceSink) -> Self {
        Self { started, sink }
    }

    /// Reports `phase` as having run from `since` until now; returns now.
    pub fn done(&self, phase: &str, since: Instant) -> Instant {
        let now = Instant::now();
        self.sink.event(event(phase, now - since, now - self.started));
        now
    }

    /// Reports `phase` as having taken `duration` until now (a step of a
    /// search, timed by the search itself).
    pub fn report(&self, phase: &str, duration: Duration) {
        self.sink.event(event(phase, duration, self.started.elapsed()));
    }

    /// Reports a phase of model step `step`, optionally of one tool.
    fn done_in_step(&self, phase: &str, since: Instant, step: i64, tool: Option<&str>) {
        let now = Instant::now();
        let mut event = event(phase, now - since, now - self.started).with("step", step);
        if let Some(tool) = tool {
            event = event.with("tool", tool);
        }
        self.sink.event(event);
    }

    /// A trace sink for the agent loop that forwards its events and turns
    /// them into `provider_request`, `tool` and `tool_batch` timings.
    pub fn loop_trace(&self) -> impl Fn(Event) + Send + Sync + 'static {
        let phases = self.clone();
        let state = Arc::new(Mutex::new(LoopState::default()));
        move |event: Event| {
            let now = Instant::now();
            if let Ok(mut state) = state.lock() {
                match event.kind.as_str() {
                    "request" => {
                        state.step = int(&event, "step");
                        state.request = Some(now);
                    }
                    "response" => {
                        if let Some(since) = state.request.take() {
                            phases.done_in_step("provider_request", since, state.step, None);
                        }
                        if let Some(since) = state.repair.take() {
                            phases.done("repair", since);
                        }
                    }
                    // The repair pass: from the rejected answer to the
                    // repaired one's response.
                    "validation" if text(&event, "decision") == "repair" => state.repair = Some(now),
                    "tool-call" => {
                        state.batch.get_or_insert(now);
                        state.calls.insert(text(&event, "call_id"), now);
                    }
                    "tool-output" => {
                        if let Some(since) = state.calls.remove(&text(&event, "call_id")) {
                            phases.done_in_step("tool", since, state.step, Some(&text(&event, "name")));
                        }
                        if state.calls.is_empty()
                            && let Some(since) = state.batch.take()
                        {
                            phases.done_in_step("tool_batch", since, state.step, None);
                        }
                    }
                    _ => {}
                }
            }
            phases.sink.event(event);
        }
    }
}

#[derive(Default)]
struct LoopState {
    step: i64,
    request: Option<Instant>,
    repair: Option<Instant>,
    batch: Option<Instant>,
    calls: HashMap<String, Instant>,
}

fn int(event: &Event, key: &str) -> i64 {
    event
        .fields
        .iter()
        .find(|(name, _)| name == key)
        .and_then(|(_, value)| match value {
            gitagent_runtime::trace::Value::Int(number) => Some(*number),
            _ => None,
        })
        .unwrap_or(0)
}

fn text(event: &Event, key: &str) -> String {
    event
        .fields
        .iter()
        .find(|(name, _)| name == key)
        .and_then(|(_, value)| match value {
            gitagent_runtime::trace::Value::Text(text) => Some(text.clone()),
            _ => None,
        })
        .unwrap_or_default()
}

/// One `explore.phase` event.
pub fn event(phase: &str, duration: Duration, elapsed: Duration) -> Event {
    Event::new("explore.phase")
        .with("phase", phase)
        .with("duration_ms", duration.as_millis() as i64)
        .with("elapsed_ms", elapsed.as_millis() as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn phase_events_carry_whole_milliseconds() {
        let rendered = gitagent_runtime::trace::render_event(
            "00:00:00",
            &event("setup", Duration::from_micros(2_700), Duration::from_millis(9)),
            false,
        );
        assert_eq!(rendered, "00:00:00 INF explore.phase phase=setup duration_ms=2 elapsed_ms=9\n");
    }
}
