//! The steady-state keys (`steady_state = true`; `crate::steady` judges the run), checked,
//! with their defaults.

use super::parse::{duration, percent, range};
use super::{Job, JobSpec, SteadyJob};
use crate::diagnostics::{Warning, WarningKind};
use crate::error::JobError;

/// The keys that tune steady state, in `KEYS` order; without `steady_state = true` they
/// have no effect.
const TUNING: [&str; 5] = [
    "steady_round",
    "steady_window",
    "steady_range",
    "steady_slope",
    "steady_measure",
];

/// SNIA's window: 5 rounds, 20% range, 10% drift.
const WINDOW: u32 = 5;
const RANGE_PCT: f64 = 20.0;
const SLOPE_PCT: f64 = 10.0;
/// The most rounds a window may hold: the job keeps each round's latency histograms
/// (about 270 KiB per operation) while it may still belong to the window. SNIA gives up
/// after 25 rounds in all.
const MAX_WINDOW: u32 = 25;

impl JobSpec {
    /// The steady-state keys, checked, when `steady_state` is on; `job` is resolved but
    /// for them (its kind, `runtime`, an application model's checkpoints).
    pub(super) fn resolve_steady(&self, job: &Job, e: &mut Vec<JobError>) -> Option<SteadyJob> {
        if !self.steady_state.unwrap_or(false) {
            return None;
        }
        if job.runtime.is_none() && !job.kind.is_app() {
            e.push(
                JobError::new(
                    "steady_state",
                    "needs `runtime`: a job that stops once steady needs a cap",
                )
                .hint("add e.g. `runtime = \"60s\"`; the job ends sooner when its rate settles"),
            );
        }
        // An application model's rate dips at every checkpoint: a round holding one
        // checkpoint is like the next, a shorter one is not.
        let checkpoint_s = job.app.as_ref().map_or(0.0, |a| a.checkpoint_interval);
        let round = duration("steady_round", &self.steady_round, e);
        if round.is_some_and(|d| d.is_zero()) {
            e.push(JobError::new(
                "steady_round",
                "0 is out of range (more than 0)",
            ));
        }
        let window = self.steady_window.unwrap_or(WINDOW);
        range("steady_window", window, 2, MAX_WINDOW, e);
        Some(SteadyJob {
            steady_round: round.map_or(checkpoint_s.max(1.0), |d| d.as_secs_f64()),
            steady_window: window,
            steady_range: percent("steady_range", &self.steady_range, e).unwrap_or(RANGE_PCT),
            steady_slope: percent("steady_slope", &self.steady_slope, e).unwrap_or(SLOPE_PCT),
            steady_measure: duration("steady_measure", &self.steady_measure, e)
                .map_or(0.0, |d| d.as_secs_f64()),
        })
    }

    /// Warnings for steady-state keys set while `steady_state` is off.
    pub(super) fn ignored_steady_keys(&self, job: &Job) -> Vec<Warning> {
        if job.steady_state {
            return Vec::new();
        }
        TUNING
            .iter()
            .filter(|k| self.is_set(k))
            .map(|k| {
                Warning::new(
                    WarningKind::IgnoredKey,
                    format!("`{k}` has no effect without `steady_state = true`"),
                    format!("remove `{k}`, or set `steady_state = true`"),
                )
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use crate::error::JobErrors;
    use crate::spec::load;

    #[test]
    fn defaults_are_snias() {
        let (_, job) = load("ioengine = \"null\"\nruntime = \"60s\"\nsteady_state = true").unwrap();
        let s = job.steady.unwrap();
        assert_eq!(
            (
                s.steady_round,
                s.steady_window,
                s.steady_range,
                s.steady_slope,
                s.steady_measure
            ),
            (1.0, 5, 20.0, 10.0, 0.0)
        );
        assert!(job.steady_state);
        let (_, off) = load("ioengine = \"null\"\nruntime = \"60s\"").unwrap();
        assert!(!off.steady_state && off.steady.is_none());
    }

    #[test]
    fn percentages_are_numbers_or_strings_with_a_percent_sign() {
        let (_, job) = load(
            "ioengine = \"null\"\nruntime = 9\nsteady_state = true\nsteady_range = \"15%\"\nsteady_slope = 2.5\nsteady_round = \"2s\"\nsteady_measure = \"10s\"",
        )
        .unwrap();
        let s = job.steady.unwrap();
        assert_eq!(
            (
                s.steady_range,
                s.steady_slope,
                s.steady_round,
                s.steady_measure
            ),
            (15.0, 2.5, 2.0, 10.0)
        );
    }

    #[test]
    fn an_application_models_round_holds_a_checkpoint() {
        let (_, job) =
            load("kind = \"oltp\"\ndirectory = \"/d\"\nruntime = \"60s\"\nsteady_state = true")
                .unwrap();
        assert_eq!(
            job.steady.unwrap().steady_round,
            5.0,
            "oltp checkpoints every 5 s"
        );
        let (_, job) = load(
            "kind = \"mailstore\"\ndirectory = \"/d\"\nruntime = \"60s\"\nsteady_state = true",
        )
        .unwrap();
        assert_eq!(job.steady.unwrap().steady_round, 1.0);
    }

    #[test]
    fn bad_values_are_refused_all_at_once() {
        let errs = load(
            "filename = \"/f\"\nsize = \"1m\"\nsteady_state = true\nsteady_window = 1\nsteady_range = \"twenty\"\nsteady_slope = 0\nsteady_round = 0",
        )
        .unwrap_err();
        let text = errs.to_string();
        for want in [
            "`steady_state`: needs `runtime`",
            "`steady_window`: 1 is out of range (2..=25)",
            "`steady_range`: \"twenty\" is not a percentage",
            "`steady_slope`: 0% is out of range",
            "`steady_round`: 0 is out of range",
        ] {
            assert!(text.contains(want), "{want}: {text}");
        }
    }

    #[test]
    fn a_files_job_refuses_them() {
        let errs = load("kind = \"files\"\nop = \"scan\"\ndirectory = \"/d\"\nsteady_state = true")
            .unwrap_err();
        assert_eq!(errs.0[0].key.as_deref(), Some("steady_state"), "{errs}");
        assert!(errs.0[0].message.contains("only applies to"), "{errs}");
    }

    #[test]
    fn tuning_keys_without_steady_state_are_warned_about() {
        let (spec, job) = load("ioengine = \"null\"\nruntime = 1\nsteady_window = 3").unwrap();
        let warned: Vec<String> = spec.warnings(&job).into_iter().map(|w| w.message).collect();
        assert_eq!(
            warned,
            ["`steady_window` has no effect without `steady_state = true`"]
        );
    }

    #[test]
    fn the_resolved_job_is_itself_a_valid_job_with_steady_state_on() {
        let (_, job) = load(
            "ioengine = \"null\"\nruntime = 9\nsteady_state = true\nsteady_range = \"15%\"\nsteady_round = \"2s\"",
        )
        .unwrap();
        let text = serde_json::to_string(&job).unwrap();
        let (_, again) = load(&text).map_err(|e: JobErrors| e.to_string()).unwrap();
        assert_eq!(job, again);
    }
}
