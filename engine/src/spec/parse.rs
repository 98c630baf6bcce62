//! From text to a `JobSpec`: TOML or JSON into a `Value`, unknown keys (with the closest
//! known one), each key's type on its own with serde's words made plain, and the value
//! readers (`size`, `duration`, `range`) every kind's resolver uses.

use std::time::Duration;

use serde_json::{Map, Value};

use super::{known_keys, DurationValue, JobSpec, PercentValue, SizeValue, MAX_RUNTIME};
use crate::error::{JobError, JobErrors};
use crate::units::{parse_duration, parse_size};

/// The closest known word, if one is close enough to be a likely typo.
pub fn closest<'a>(word: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    candidates
        .into_iter()
        .map(|c| (strsim::damerau_levenshtein(word, c), c))
        .filter(|(d, c)| *d <= (c.len().max(word.len()) / 3).max(1) + usize::from(word.len() > 5))
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c)
}

/// Reads a job from TOML or JSON text (JSON if it starts with `{`).
pub fn parse_text(text: &str) -> Result<Value, JobErrors> {
    if text.trim_start().starts_with('{') {
        serde_json::from_str(text)
            .map_err(|e| JobError::whole(format!("not valid JSON: {e}")).into())
    } else {
        let table: toml::Table = toml::from_str(text).map_err(|e| {
            JobErrors::from(JobError::whole(format!(
                "not valid TOML: {}",
                e.to_string().trim_end()
            )))
        })?;
        // JSON has no NaN or infinity: converted, TOML's `nan` would become null, and a
        // null key means "use the default". Refuse it instead.
        let bad: Vec<JobError> = table
            .iter()
            .filter(|(_, v)| has_non_finite(v))
            .map(|(k, _)| {
                JobError::new(
                    k,
                    "is not a finite number (`nan` and `inf` are not allowed)",
                )
            })
            .collect();
        if !bad.is_empty() {
            return Err(JobErrors(bad));
        }
        serde_json::to_value(table).map_err(|e| JobError::whole(e.to_string()).into())
    }
}

fn has_non_finite(v: &toml::Value) -> bool {
    match v {
        toml::Value::Float(f) => !f.is_finite(),
        toml::Value::Array(a) => a.iter().any(has_non_finite),
        toml::Value::Table(t) => t.values().any(has_non_finite),
        _ => false,
    }
}

/// Turns a parsed document into a `JobSpec`, reporting every unknown key and every
/// mistyped value at once.
pub fn spec_from_value(value: Value) -> Result<JobSpec, JobErrors> {
    let Value::Object(map) = value else {
        return Err(JobError::whole(
            "a job must be a table of keys (a TOML file or a JSON object)",
        )
        .into());
    };
    let known = known_keys();
    let mut errors = Vec::new();
    for (key, val) in &map {
        if !known.iter().any(|k| k == key) {
            let mut e = JobError::new(key, "unknown key");
            e = match closest(key, known.iter().map(String::as_str)) {
                Some(k) => e.hint(format!("did you mean `{k}`?")),
                None => e.hint(format!("known keys: {}", known.join(", "))),
            };
            errors.push(e);
            continue;
        }
        let mut one = Map::new();
        one.insert(key.clone(), val.clone());
        if let Err(e) = serde_json::from_value::<JobSpec>(Value::Object(one)) {
            errors.push(type_error(key, val, &e.to_string()));
        }
    }
    if !errors.is_empty() {
        return Err(JobErrors(errors));
    }
    // A null value means "the default", as if the key were not there.
    let given = map
        .iter()
        .filter(|(_, v)| !v.is_null())
        .map(|(k, _)| k.clone())
        .collect();
    let mut spec: JobSpec = serde_json::from_value(Value::Object(map))
        .map_err(|e| JobErrors::from(JobError::whole(e.to_string())))?;
    spec.given = given;
    Ok(spec)
}

/// Rewords serde's message for one key, and suggests the closest allowed value.
fn type_error(key: &str, val: &Value, serde_msg: &str) -> JobError {
    let msg = serde_msg
        .split(" at line ")
        .next()
        .unwrap_or(serde_msg)
        .to_string();
    let mut e = JobError::new(key, format!("{msg} (got {val})"));
    if let (Some(start), Some(got)) = (msg.find("expected one of "), val.as_str()) {
        let allowed: Vec<&str> = msg[start + 16..]
            .split(", ")
            .map(|s| s.trim_matches(|c| c == '`' || c == ' '))
            .collect();
        e.message = format!(
            "`{got}` is not allowed; allowed: {}",
            allowed
                .iter()
                .map(|a| format!("`{a}`"))
                .collect::<Vec<_>>()
                .join(", ")
        );
        if let Some(c) = closest(got, allowed.iter().copied()) {
            e = e.hint(format!("did you mean `{c}`?"));
        }
    } else if msg.contains("untagged enum SizeValue") {
        e.message = format!("{val} is not a size");
        e = e.hint("write bytes as a number, or a string such as `4k`, `64KiB`, `1g`");
    } else if msg.contains("untagged enum DurationValue") {
        e.message = format!("{val} is not a duration");
        e = e.hint("write seconds as a number, or a string such as `500ms`, `30s`, `2m`");
    } else if msg.contains("untagged enum PercentValue") {
        e.message = format!("{val} is not a percentage");
        e = e.hint(PERCENT_HINT);
    }
    e
}

/// A size given in percent of the target (`"95%"`), in percent; `None` for bytes.
pub(super) fn share_of_target(
    key: &str,
    v: &Option<SizeValue>,
    errors: &mut Vec<JobError>,
) -> Option<f64> {
    let SizeValue::Text(t) = v.as_ref()? else {
        return None;
    };
    let n = t.trim().strip_suffix('%')?;
    match n.trim().parse::<f64>() {
        Ok(p) if p > 0.0 && p <= 100.0 => Some(p),
        _ => {
            errors.push(
                JobError::new(
                    key,
                    format!("`{t}` is not a percent of the target above 0 and at most 100"),
                )
                .hint("e.g. `\"50%\"`: half of the file or device"),
            );
            None
        }
    }
}

pub(super) fn size(key: &str, v: &Option<SizeValue>, errors: &mut Vec<JobError>) -> Option<u64> {
    if matches!(v, Some(SizeValue::Text(t)) if t.trim().ends_with('%')) {
        // `share_of_target` reads (and checks) it.
        return None;
    }
    match v.as_ref()? {
        SizeValue::Bytes(b) => Some(*b),
        SizeValue::Text(t) => {
            match parse_size(t) {
                Ok(b) => Some(b),
                Err(e) => {
                    errors.push(JobError::new(key, e.to_string()).hint(
                        "sizes are binary: `4k`, `64KiB`, `1g`, `1.5GiB`, or bytes as a number",
                    ));
                    None
                }
            }
        }
    }
}

pub(super) fn duration(
    key: &str,
    v: &Option<DurationValue>,
    errors: &mut Vec<JobError>,
) -> Option<Duration> {
    match v.as_ref()? {
        DurationValue::Seconds(s)
            if s.is_finite() && *s >= 0.0 && *s < MAX_RUNTIME.as_secs_f64() =>
        {
            Some(Duration::from_secs_f64(*s))
        }
        DurationValue::Seconds(s) => {
            errors.push(JobError::new(
                key,
                format!("{s} seconds is out of range (0 to 7 days)"),
            ));
            None
        }
        DurationValue::Text(t) => match parse_duration(t) {
            Ok(d) => Some(d),
            Err(e) => {
                errors.push(JobError::new(key, e.to_string()).hint(
                    "durations take a unit: `100ms`, `30s`, `2m`, `1h`; a bare number is seconds",
                ));
                None
            }
        },
    }
}

const PERCENT_HINT: &str = "write a string such as `\"20%\"`, or the percent as a number (20)";

/// A percentage, in percent.
pub(super) fn percent(
    key: &str,
    v: &Option<PercentValue>,
    errors: &mut Vec<JobError>,
) -> Option<f64> {
    let pct = match v.as_ref()? {
        PercentValue::Percent(p) => Some(*p),
        PercentValue::Text(t) => t
            .trim()
            .strip_suffix('%')
            .and_then(|n| n.trim().parse::<f64>().ok()),
    };
    match pct {
        Some(p) if p.is_finite() && p > 0.0 && p <= 100.0 => Some(p),
        Some(p) => {
            errors.push(JobError::new(
                key,
                format!("{p}% is out of range (more than 0%, at most 100%)"),
            ));
            None
        }
        None => {
            let shown = match v {
                Some(PercentValue::Text(t)) => format!("{t:?}"),
                _ => String::new(),
            };
            errors.push(
                JobError::new(key, format!("{shown} is not a percentage")).hint(PERCENT_HINT),
            );
            None
        }
    }
}

pub(super) fn range<T: PartialOrd + std::fmt::Display + Copy>(
    key: &str,
    v: T,
    lo: T,
    hi: T,
    errors: &mut Vec<JobError>,
) {
    // `contains` is false for NaN (TOML can write `nan`), so NaN is out of range too.
    if !(lo..=hi).contains(&v) {
        errors.push(JobError::new(
            key,
            format!("{v} is out of range ({lo}..={hi})"),
        ));
    }
}
