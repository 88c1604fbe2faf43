//! Show over a large inventory: 10,000 AppInsts (plus 10,000 foreign ones) in the simulator,
//! read back over HTTP. Run with `cargo bench --bench sim_show`; prints a table of timings.
//!
//! Not a test: it asserts only that the answers are complete, and reports the figures.

use std::time::{Duration, Instant};

use edge_connect_sim::{spawn, Seed, SimConfig};
use serde_json::{json, Value};

const ORG: &str = "edp-developer-framework";
const COUNT: usize = 10_000;
const ROUNDS: usize = 10;

struct Case {
    name: &'static str,
    rpc: &'static str,
    body: Value,
    expect_lines: usize,
}

async fn login(http: &reqwest::Client, base: &str) -> String {
    let reply: Value = http
        .post(format!("{base}/api/v1/login"))
        .json(&json!({"username": "garm", "password": "garm-password"}))
        .send()
        .await
        .expect("login sent")
        .json()
        .await
        .expect("login reply");
    reply["token"].as_str().expect("token").to_string()
}

fn stats(mut samples: Vec<Duration>) -> (f64, f64, f64) {
    samples.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    (
        ms(samples[0]),
        ms(samples[samples.len() / 2]),
        ms(samples[samples.len() - 1]),
    )
}

fn main() {
    let sim = spawn(SimConfig::default()).expect("simulator starts");
    let seed_start = Instant::now();
    sim.seed(Seed {
        org: ORG.into(),
        count: COUNT,
        app_insts: true,
        name_prefix: "runner-".into(),
        env_vars: [("GARM_POOL_ID".to_string(), "pool-1".to_string())].into(),
        ..Seed::default()
    });
    sim.seed(Seed {
        org: "foreign-org".into(),
        count: COUNT,
        app_insts: true,
        ..Seed::default()
    });
    let seed_time = seed_start.elapsed();

    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let base = sim.url();
    let cases = [
        Case {
            name: "ShowAppInst, org filter (10k of 20k)",
            rpc: "ShowAppInst",
            body: json!({"region": "EU", "appinst": {"key": {"organization": ORG}}}),
            expect_lines: COUNT,
        },
        Case {
            name: "ShowAppInst, no filter (10k visible)",
            rpc: "ShowAppInst",
            body: json!({"region": "EU"}),
            expect_lines: COUNT,
        },
        Case {
            name: "ShowAppInst, state=Ready (generic filter)",
            rpc: "ShowAppInst",
            body: json!({"region": "EU", "appinst": {"state": "Ready"}}),
            expect_lines: COUNT,
        },
        Case {
            name: "ShowAppInst, one key",
            rpc: "ShowAppInst",
            body: json!({"region": "EU", "appinst": {"key": {"organization": ORG, "name": "runner-5000"}}}),
            expect_lines: 1,
        },
        Case {
            name: "ShowApp, org filter (10k, manifests)",
            rpc: "ShowApp",
            body: json!({"region": "EU", "app": {"key": {"organization": ORG}}}),
            expect_lines: COUNT,
        },
        Case {
            name: "ShowApp, env_vars filter",
            rpc: "ShowApp",
            body: json!({"region": "EU", "app": {"env_vars": {"GARM_POOL_ID": "pool-1"}}}),
            expect_lines: COUNT,
        },
    ];

    println!("edge-connect-sim Show benchmark: {COUNT} AppInsts in the caller's org + {COUNT} foreign, {ROUNDS} rounds each");
    println!(
        "seeding {} Apps + {} AppInsts took {:.0} ms",
        2 * COUNT,
        2 * COUNT,
        seed_time.as_secs_f64() * 1000.0
    );
    println!();
    println!(
        "{:<44} {:>7} {:>9} {:>9} {:>9} {:>9}",
        "case", "lines", "MB", "min ms", "median", "max ms"
    );
    runtime.block_on(async {
        let http = reqwest::Client::new();
        let token = login(&http, &base).await;
        for case in &cases {
            let mut samples = Vec::with_capacity(ROUNDS);
            let mut bytes = 0usize;
            for _ in 0..ROUNDS {
                let start = Instant::now();
                let body = http
                    .post(format!("{base}/api/v1/auth/ctrl/{}", case.rpc))
                    .bearer_auth(&token)
                    .body(case.body.to_string())
                    .send()
                    .await
                    .expect("request sent")
                    .bytes()
                    .await
                    .expect("body read");
                samples.push(start.elapsed());
                let lines = body.iter().filter(|b| **b == b'\n').count();
                assert_eq!(lines, case.expect_lines, "{}", case.name);
                bytes = body.len();
            }
            let (min, median, max) = stats(samples);
            println!(
                "{:<44} {:>7} {:>9.2} {:>9.1} {:>9.1} {:>9.1}",
                case.name,
                case.expect_lines,
                bytes as f64 / 1_000_000.0,
                min,
                median,
                max
            );
        }
    });
    sim.shutdown();
}
