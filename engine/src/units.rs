//! Sizes and durations as people write them in job files.
//!
//! Sizes follow fio's default `kb_base=1024`: every suffix is binary, so `4k`, `4K`,
//! `4KB` and `4KiB` all mean 4096 bytes. A bare number is bytes.
//! Durations take `ns`, `us`, `ms`, `s`, `m`, `h`; a bare number is seconds (as fio's
//! `runtime`).

use std::time::Duration;

/// A size or duration that could not be read; the message says what is accepted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{input}` is not a {what}")]
pub struct ParseError {
    pub input: String,
    pub what: &'static str,
}

const SIZE_SUFFIXES: &[(&str, u64)] = &[
    ("", 1),
    ("b", 1),
    ("k", 1 << 10),
    ("kb", 1 << 10),
    ("kib", 1 << 10),
    ("m", 1 << 20),
    ("mb", 1 << 20),
    ("mib", 1 << 20),
    ("g", 1 << 30),
    ("gb", 1 << 30),
    ("gib", 1 << 30),
    ("t", 1 << 40),
    ("tb", 1 << 40),
    ("tib", 1 << 40),
    ("p", 1 << 50),
    ("pb", 1 << 50),
    ("pib", 1 << 50),
];

/// Splits `"64KiB"` into `("64", "kib")`.
fn split_number(s: &str) -> (&str, String) {
    let s = s.trim();
    let end = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    (&s[..end], s[end..].trim().to_ascii_lowercase())
}

/// Parses a size such as `4k`, `64KiB`, `1g`, `1.5GiB` or `4096` into bytes.
pub fn parse_size(input: &str) -> Result<u64, ParseError> {
    let err = || ParseError {
        input: input.to_string(),
        what: "size",
    };
    let (number, suffix) = split_number(input);
    if number.is_empty() {
        return Err(err());
    }
    let mult = SIZE_SUFFIXES
        .iter()
        .find(|(s, _)| *s == suffix)
        .map(|(_, m)| *m)
        .ok_or_else(err)?;
    if let Ok(n) = number.parse::<u64>() {
        return n.checked_mul(mult).ok_or_else(err);
    }
    let f: f64 = number.parse().map_err(|_| err())?;
    let bytes = f * mult as f64;
    // A fractional size must still come out as whole bytes ("1.5k" yes, "0.3" no).
    if !bytes.is_finite() || bytes.fract() != 0.0 || bytes > u64::MAX as f64 {
        return Err(err());
    }
    Ok(bytes as u64)
}

/// Parses a duration such as `30s`, `500ms`, `2m` or `10` (seconds).
pub fn parse_duration(input: &str) -> Result<Duration, ParseError> {
    let err = || ParseError {
        input: input.to_string(),
        what: "duration",
    };
    let (number, suffix) = split_number(input);
    if number.is_empty() {
        return Err(err());
    }
    let value: f64 = number.parse().map_err(|_| err())?;
    let ns_per_unit = match suffix.as_str() {
        "ns" => 1.0,
        "us" => 1e3,
        "ms" => 1e6,
        "" | "s" => 1e9,
        "m" | "min" => 60e9,
        "h" => 3600e9,
        _ => return Err(err()),
    };
    let ns = value * ns_per_unit;
    if !ns.is_finite() || ns > u64::MAX as f64 {
        return Err(err());
    }
    Ok(Duration::from_nanos(ns.round() as u64))
}

/// Formats bytes the way they are written back into the resolved job: exact, binary.
pub fn format_size(bytes: u64) -> String {
    for (suffix, mult) in [
        ("PiB", 1u64 << 50),
        ("TiB", 1 << 40),
        ("GiB", 1 << 30),
        ("MiB", 1 << 20),
        ("KiB", 1 << 10),
    ] {
        if bytes >= mult && bytes % mult == 0 {
            return format!("{}{suffix}", bytes / mult);
        }
    }
    format!("{bytes}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_are_binary_whatever_the_suffix() {
        assert_eq!(parse_size("4k"), Ok(4096));
        assert_eq!(parse_size("4K"), Ok(4096));
        assert_eq!(parse_size("4KB"), Ok(4096));
        assert_eq!(parse_size("64KiB"), Ok(65536));
        assert_eq!(parse_size("1g"), Ok(1 << 30));
        assert_eq!(parse_size("1.5GiB"), Ok(3 << 29));
        assert_eq!(parse_size("4096"), Ok(4096));
        assert_eq!(parse_size(" 2 MiB "), Ok(2 << 20));
    }

    #[test]
    fn bad_sizes_are_refused() {
        for bad in ["", "k", "4x", "-4k", "0.3", "1e3", "99999999999999999999"] {
            assert!(parse_size(bad).is_err(), "{bad} should be refused");
        }
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("30s"), Ok(Duration::from_secs(30)));
        assert_eq!(parse_duration("10"), Ok(Duration::from_secs(10)));
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(parse_duration("1.5s"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse_duration("100us"), Ok(Duration::from_micros(100)));
        assert!(parse_duration("3 fortnights").is_err());
        assert!(parse_duration("s").is_err());
    }

    /// `tests/data/units.json`: the vectors pytest checks the lab's parser against too,
    /// so that a size or a duration means the same on both sides of the contract.
    #[test]
    fn the_engine_reads_every_shared_unit_vector_as_the_lab_does() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/data/units.json");
        let text = std::fs::read_to_string(path).expect("tests/data/units.json is readable");
        let doc: serde_json::Value = serde_json::from_str(&text).expect("units.json is JSON");
        let mut wrong = Vec::new();
        let entries = |section: &str| -> Vec<serde_json::Value> {
            doc[section]
                .as_array()
                .unwrap_or_else(|| panic!("units.json has a `{section}` list"))
                .clone()
        };
        for e in entries("sizes") {
            let text = e["text"].as_str().expect("every entry has a `text`");
            let got = parse_size(text);
            let ok = if e["error"] == true {
                got.is_err()
            } else {
                got.as_ref().ok() == Some(&e["bytes"].as_u64().expect("`bytes` or `error`"))
            };
            if !ok {
                wrong.push(format!("size {text:?}: expected {e}, got {got:?}"));
            }
        }
        for e in entries("durations") {
            let text = e["text"].as_str().expect("every entry has a `text`");
            let got = parse_duration(text);
            let ok = if e["error"] == true {
                got.is_err()
            } else {
                let want = e["seconds"].as_f64().expect("`seconds` or `error`");
                got.as_ref()
                    .is_ok_and(|d| (d.as_secs_f64() - want).abs() <= want.abs() * 1e-12)
            };
            if !ok {
                wrong.push(format!("duration {text:?}: expected {e}, got {got:?}"));
            }
        }
        assert!(
            wrong.is_empty(),
            "units.json disagrees with the engine:\n{}",
            wrong.join("\n")
        );
    }

    #[test]
    fn format_round_trips() {
        for b in [4096u64, 65536, 1 << 30, 3 << 29, 1000, 12288] {
            assert_eq!(parse_size(&format_size(b)), Ok(b));
        }
        assert_eq!(format_size(1 << 30), "1GiB");
        assert_eq!(format_size(12288), "12KiB");
    }
}
