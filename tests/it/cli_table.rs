//! The CLI's `list` and `get` for a person: a table of name, pool, site, Edge Connect state, age
//! and fault, as `garm-cli runner list` shows GARM's runners; `--format json` prints what GARM
//! gets, unchanged.

use edge_connect_sim::{Fault, FaultKind};

use crate::support::{command, run, Run, World, CONTROLLER, POOL};

/// Runs the built binary in CLI mode with `args`, its config and controller from the
/// environment as an operator would set them.
pub(crate) fn cli(w: &World, args: &[&str]) -> Run {
    let mut cmd = command();
    cmd.env("GARM_PROVIDER_CONFIG_FILE", &w.config)
        .env("GARM_CONTROLLER_ID", CONTROLLER);
    run(cmd.args(args), None)
}

/// A table's rows as cells, after checking that every row starts each column where the header
/// does (the columns are aligned).
fn cells(table: &str) -> Vec<Vec<String>> {
    let lines: Vec<&str> = table.lines().collect();
    let header = lines.first().expect("a header");
    let starts: Vec<usize> = ["NAME", "POOL", "SITE", "STATE", "AGE", "FAULT"]
        .iter()
        .map(|title| header.find(title).expect("every column title"))
        .collect();
    lines
        .iter()
        .map(|line| {
            let mut row = Vec::new();
            for (i, &start) in starts.iter().enumerate() {
                let end = starts.get(i + 1).copied().unwrap_or(line.len());
                let cell = line.get(start..end).unwrap_or_else(|| panic!("{line}"));
                assert!(
                    i == 0 || line[..start].ends_with("  "),
                    "column {i} not aligned: {line:?}"
                );
                row.push(cell.trim_end().to_string());
            }
            row
        })
        .collect()
}

#[test]
fn list_and_get_print_a_table_and_json_on_request() {
    let w = World::new();
    for name in ["garm-table1", "garm-table2", "garm-table3"] {
        let r = w.create("bootstrap-github-jit.json", name, POOL, &[]);
        assert_eq!(r.code, 0, "{name}: {}", r.stderr);
    }
    let stop = w.garm("StopInstance", &[("GARM_INSTANCE_ID", "garm-table2")], None);
    assert_eq!(stop.code, 0, "{}", stop.stderr);
    // A runner whose AppInst failed and could not be removed: CreateError with its reason.
    w.sim
        .inject(Fault::create_error_left(1, "no nodes with enough memory"));
    w.sim.inject(
        Fault::new(
            "DeleteAppInst",
            FaultKind::HttpStatus {
                status: 400,
                message: Some("Request denied by the operator policy".into()),
            },
        )
        .times(1000),
    );
    let failed = w.create("bootstrap-github-jit.json", "garm-table4", POOL, &[]);
    assert_eq!(failed.code, 1, "{}", failed.stdout);

    let json = w.garm("ListInstances", &[("GARM_POOL_ID", POOL)], None);
    assert_eq!(json.code, 0, "{}", json.stderr);

    let list = cli(&w, &["list"]);
    assert_eq!(list.code, 0, "{}", list.stderr);
    let rows = cells(&list.stdout);
    assert_eq!(rows[0], ["NAME", "POOL", "SITE", "STATE", "AGE", "FAULT"]);
    let mut rows = rows[1..].to_vec();
    rows.sort();
    let mut ages = Vec::new();
    for row in &mut rows {
        ages.push(std::mem::take(&mut row[4]));
    }
    assert_eq!(
        rows,
        [
            ["garm-table1", POOL, "TelekomOP/Munich", "Ready", "", "-"],
            // Stopped: the site its App records, and no AppInst.
            [
                "garm-table2",
                POOL,
                "TelekomOP/Munich",
                "no AppInst (stopped)",
                "",
                "-"
            ],
            ["garm-table3", POOL, "TelekomOP/Munich", "Ready", "", "-"],
            [
                "garm-table4",
                POOL,
                "TelekomOP/Munich",
                "CreateError",
                "",
                "CreateError: No nodes with enough memory"
            ],
        ]
        .map(|r| r.map(String::from).to_vec())
    );
    // Ages are a whole number of a unit (seconds here, unless a loaded machine made the test
    // take minutes); a stopped runner has no AppInst and so no age.
    for (i, age) in ages.iter().enumerate() {
        if i == 1 {
            assert_eq!(age, "-");
        } else {
            let digits = age.strip_suffix(['s', 'm']).unwrap_or_default();
            assert!(
                !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()),
                "{age}"
            );
        }
    }

    // `--format json` prints what it printed before: GARM's objects, indented.
    let scripted = cli(&w, &["list", "--pool-id", POOL, "--format", "json"]);
    assert_eq!(scripted.code, 0, "{}", scripted.stderr);
    let garm: serde_json::Value = serde_json::from_str(&json.stdout).expect("GARM's JSON");
    let printed: serde_json::Value = serde_json::from_str(&scripted.stdout).expect("JSON");
    assert_eq!(printed, garm);
    // Field for field in GARM's order, only indented (no value here holds a blank).
    assert_eq!(scripted.stdout.replace(['\n', ' '], ""), json.stdout);
    assert!(scripted
        .stdout
        .starts_with("[\n  {\n    \"provider_id\": \"garm-table"));

    let get = cli(&w, &["get", "garm-table4"]);
    assert_eq!(get.code, 0, "{}", get.stderr);
    let rows = cells(&get.stdout);
    assert_eq!(rows.len(), 2, "{}", get.stdout);
    assert_eq!(
        [&rows[1][0], &rows[1][3], &rows[1][5]],
        [
            "garm-table4",
            "CreateError",
            "CreateError: No nodes with enough memory"
        ]
    );
    let get = cli(&w, &["get", "garm-table4", "--format", "json"]);
    let one = w.garm("GetInstance", &[("GARM_INSTANCE_ID", "garm-table4")], None);
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&get.stdout).expect("JSON"),
        one.json()
    );
    assert_eq!(one.json()["status"], "error");
}
