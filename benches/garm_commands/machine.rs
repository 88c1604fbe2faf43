//! The machine and the date, for the report's header.

use crate::prelude::*;

pub(crate) struct Machine {
    pub(crate) nproc: usize,
    pub(crate) cpu: String,
    pub(crate) load: String,
    pub(crate) kernel: String,
    pub(crate) rustc: String,
    pub(crate) date: String,
}

impl Machine {
    pub(crate) fn read() -> Machine {
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let cpu = cpuinfo
            .lines()
            .find(|l| l.starts_with("model name"))
            .and_then(|l| l.split_once(':'))
            .map(|(_, v)| v.trim().to_string())
            .unwrap_or_else(|| "unknown".to_string());
        let mhz = cpuinfo
            .lines()
            .find(|l| l.starts_with("cpu MHz"))
            .and_then(|l| l.split_once(':'))
            .map(|(_, v)| format!(" @ {:.0} MHz", v.trim().parse::<f64>().unwrap_or(0.0)))
            .unwrap_or_default();
        let first_line = |path: &str| {
            std::fs::read_to_string(path)
                .ok()
                .and_then(|t| t.lines().next().map(str::to_string))
                .unwrap_or_else(|| "unknown".to_string())
        };
        let load = load_average();
        let kernel = first_line("/proc/sys/kernel/osrelease");
        let rustc = Command::new(std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into()))
            .arg("--version")
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
            .unwrap_or_else(|| "unknown".to_string());
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0);
        Machine {
            nproc: std::thread::available_parallelism().map_or(1, |n| n.get()),
            cpu: format!("{cpu}{mhz}"),
            load,
            kernel,
            rustc,
            date: utc_date(now),
        }
    }
}

pub(crate) fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|t| t.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "unknown".to_string())
}

/// `YYYY-MM-DD HH:MM UTC` for seconds since the epoch (civil-from-days, proleptic Gregorian).
pub(crate) fn utc_date(secs: u64) -> String {
    let rem = secs % 86_400;
    let (y, m, d) = edge_connect_sim::civil_from_days((secs / 86_400) as i64);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02} UTC",
        rem / 3600,
        (rem % 3600) / 60
    )
}
