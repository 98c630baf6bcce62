//! The committed JSON Schemas must match the engine's types.
//! `make schemas` (FSLAB_UPDATE_SCHEMAS=1) rewrites them.

use std::path::PathBuf;

fn check(name: &str, schema: serde_json::Value) {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../schemas")
        .join(name);
    let fresh = serde_json::to_string_pretty(&schema).unwrap() + "\n";
    if std::env::var_os("FSLAB_UPDATE_SCHEMAS").is_some() {
        std::fs::write(&path, &fresh).unwrap();
        return;
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == fresh,
        "schemas/{name} is stale: the engine's types changed. Run `make schemas` and commit the result."
    );
}

#[test]
fn job_schema_is_current() {
    check("job.schema.json", fslab_engine::report::job_schema());
}

#[test]
fn report_schema_is_current() {
    check("report.schema.json", fslab_engine::report::report_schema());
}
