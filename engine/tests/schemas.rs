//! The committed JSON Schemas must match the engine's types.
//! `make schemas` (FSLAB_UPDATE_SCHEMAS=1) rewrites them.

use std::path::PathBuf;

use serde_json::Value;

fn check(name: &str, schema: Value) {
    let fresh = serde_json::to_string_pretty(&schema).unwrap() + "\n";
    check_file(&format!("schemas/{name}"), fresh);
}

fn check_file(name: &str, fresh: String) {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join(name);
    if std::env::var_os("FSLAB_UPDATE_SCHEMAS").is_some() {
        std::fs::write(&path, &fresh).unwrap();
        return;
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == fresh,
        "{name} is stale: the engine's types changed. Run `make schemas` and commit the result."
    );
}

#[test]
fn job_schema_is_current() {
    check("job.schema.json", fslab_engine::spec::job_schema());
}

#[test]
fn report_schema_is_current() {
    check("report.schema.json", fslab_engine::report::report_schema());
}

#[test]
fn progress_schema_is_current() {
    check(
        "progress.schema.json",
        fslab_engine::report::progress_schema(),
    );
}

#[test]
fn check_schema_is_current() {
    check("check.schema.json", fslab_engine::report::check_schema());
}

#[test]
fn steady_schema_is_current() {
    check("steady.schema.json", fslab_engine::report::steady_schema());
}

#[test]
fn merge_schema_is_current() {
    check("merge.schema.json", fslab_engine::merge::input_schema());
}

#[test]
fn fio_report_schema_is_current() {
    check(
        "fio-report.schema.json",
        fslab_engine::fio::run::report_schema(),
    );
}

/// docs/fio.md's table of options is `fio::options::OPTIONS`, between its markers.
#[test]
fn fio_options_table_is_current() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../docs/fio.md");
    let doc = std::fs::read_to_string(&path).unwrap_or_default();
    let (begin, end) = ("<!-- options: generated -->\n", "<!-- options: end -->");
    let (Some(a), Some(b)) = (doc.find(begin), doc.find(end)) else {
        panic!("docs/fio.md has no `{begin}` ... `{end}` markers");
    };
    let fresh = format!(
        "{}{begin}{}{}",
        &doc[..a],
        fslab_engine::fio::options::markdown_table(),
        &doc[b..]
    );
    check_file("docs/fio.md", fresh);
}

/// The type of a job key, in words, from its schema.
fn type_of(prop: &Value, defs: &Value) -> String {
    let Some(any) = prop["anyOf"].as_array() else {
        let types = prop["type"]
            .as_array()
            .cloned()
            .unwrap_or_else(|| vec![prop["type"].clone()]);
        let t: Vec<&str> = types
            .iter()
            .filter_map(Value::as_str)
            .filter(|t| *t != "null")
            .collect();
        return t.join(", ");
    };
    let mut kinds = Vec::new();
    for alt in any {
        if let Some(r) = alt["$ref"].as_str() {
            let def = &defs[r.trim_start_matches("#/$defs/")];
            if let Some(one) = def["oneOf"].as_array() {
                kinds.push(
                    one.iter()
                        .filter_map(|v| v["const"].as_str().or(v["enum"][0].as_str()))
                        .map(|v| format!("`{v}`"))
                        .collect::<Vec<_>>()
                        .join(" \\| "),
                );
            } else if def["anyOf"].is_array() {
                kinds.push(
                    if r.ends_with("SizeValue") {
                        "size"
                    } else if r.ends_with("DurationValue") {
                        "duration"
                    } else if r.ends_with("PercentValue") {
                        "percentage"
                    } else {
                        "string, integer"
                    }
                    .into(),
                );
            }
        } else if let Some(t) = alt["type"].as_str() {
            if t != "null" {
                kinds.push(t.to_string());
            }
        } else if let Some(ts) = alt["type"].as_array() {
            kinds.extend(
                ts.iter()
                    .filter_map(Value::as_str)
                    .filter(|t| *t != "null")
                    .map(String::from),
            );
        }
    }
    if kinds.is_empty() {
        if let Some(ts) = prop["type"].as_array() {
            kinds.extend(
                ts.iter()
                    .filter_map(Value::as_str)
                    .filter(|t| *t != "null")
                    .map(String::from),
            );
        }
    }
    kinds.join(", ")
}

/// docs/job-keys.md: the job reference, written from the same doc comments as the schema.
#[test]
fn job_key_reference_is_current() {
    let schema = fslab_engine::spec::job_schema();
    let mut md = String::from(
        "# Job keys\n\n<!-- Generated from engine/src/spec/mod.rs by `make schemas`; do not edit. -->\n\n\
         Sizes are bytes as a number or a string with a binary suffix (`4k` = `4KiB` = 4096).\n\
         Durations are seconds as a number or a string with a unit (`500ms`, `30s`, `2m`).\n\
         Percentages are a number of percent or a string ending in `%` (`20` = `\"20%\"`).\n\n\
         | key | type | meaning |\n|---|---|---|\n",
    );
    let props = schema["properties"].as_object().unwrap();
    for (key, prop) in props {
        let ty = type_of(prop, &schema["$defs"]);
        let desc = prop["description"]
            .as_str()
            .unwrap_or("")
            .replace('\n', " ");
        md.push_str(&format!("| `{key}` | {ty} | {desc} |\n"));
    }
    check_file("docs/job-keys.md", md);
}
