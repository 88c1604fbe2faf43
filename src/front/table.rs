//! The CLI's table of runners for a person, as `garm-cli runner list` shows GARM's: one row per
//! runner with its name, pool, site, Edge Connect state, age and fault in words. Scripts use
//! `--format json` instead, which prints what GARM gets.

use std::time::SystemTime;

use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;

use crate::garm::InstanceStatus;
use crate::provider::status::RunnerView;

/// The column titles.
const HEADER: [&str; 6] = ["NAME", "POOL", "SITE", "STATE", "AGE", "FAULT"];

/// Longest cell, in characters: a fault can be a page of the controller's text.
const MAX_CELL_CHARS: usize = 200;

/// The runners as aligned columns, one line each under a header, ending with a newline. Empty
/// values print as `-`; control characters in values (the controller's text) are escaped.
pub fn render(runners: &[RunnerView], now: SystemTime) -> String {
    let rows: Vec<[String; 6]> = runners.iter().map(|r| row(r, now)).collect();
    let mut widths = HEADER.map(|h| h.chars().count());
    for row in &rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    for cells in std::iter::once(HEADER.map(String::from)).chain(rows) {
        let line = cells
            .iter()
            .zip(widths)
            .map(|(cell, w)| format!("{cell:w$}"));
        // The last column is not padded: no trailing blanks.
        out.push_str(line.collect::<Vec<_>>().join("  ").trim_end());
        out.push('\n');
    }
    out
}

fn row(r: &RunnerView, now: SystemTime) -> [String; 6] {
    let cell = |s: &str| match s {
        "" => "-".to_string(),
        s => crate::text::echo_max(s, MAX_CELL_CHARS),
    };
    let age = age(&r.created_at, now).unwrap_or_default();
    // A stopped runner has no AppInst, so no Edge Connect state: say what it is instead.
    let state = match (r.state.as_str(), &r.instance.status) {
        ("", InstanceStatus::Stopped) => "no AppInst (stopped)",
        (state, _) => state,
    };
    let cells: [&str; 6] = [&r.instance.name, &r.pool, &r.site, state, &age, &r.fault];
    cells.map(cell)
}

/// How long ago `created_at` (RFC 3339, as Edge Connect writes it) was, in the largest whole
/// unit as `kubectl get` prints it: `45s`, `12m`, `5h`, `3d`. `None` when the time cannot be
/// read; a time ahead of `now` (clocks apart) counts as `0s`.
fn age(created_at: &str, now: SystemTime) -> Option<String> {
    let created = OffsetDateTime::parse(created_at, &Rfc3339)
        .ok()?
        .unix_timestamp();
    let secs = (OffsetDateTime::from(now).unix_timestamp() - created).max(0);
    Some(match secs {
        s if s < 120 => format!("{s}s"),
        s if s < 2 * 3600 => format!("{}m", s / 60),
        s if s < 2 * 86_400 => format!("{}h", s / 3600),
        s => format!("{}d", s / 86_400),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::garm::{InstanceStatus, ProviderInstance};
    use std::time::{Duration, UNIX_EPOCH};

    fn at(secs: u64) -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(secs)
    }

    #[test]
    fn rfc3339_times_read_as_edge_connect_writes_them() {
        assert_eq!(age("1970-01-01T00:00:00Z", at(59)).as_deref(), Some("59s"));
        for t in [
            "2026-01-02T03:04:05Z",
            "2026-01-02T03:04:05.123456789Z",
            "2026-01-02T04:04:05+01:00",
        ] {
            assert_eq!(
                age(t, at(1_767_323_045 + 59)).as_deref(),
                Some("59s"),
                "{t}"
            );
        }
        for bad in [
            "",
            "2026-01-02",
            "2026-13-02T00:00:00Z",
            "x-y-zTa:b:cZ",
            "2026-01-02T03:04:05",
        ] {
            assert_eq!(age(bad, at(1_767_323_045)), None, "{bad}");
        }
    }

    #[test]
    fn ages_use_the_largest_whole_unit() {
        let t = "1970-01-01T00:00:00Z";
        for (secs, shown) in [
            (0, "0s"),
            (119, "119s"),
            (120, "2m"),
            (7199, "119m"),
            (7200, "2h"),
            (2 * 86_400, "2d"),
        ] {
            assert_eq!(age(t, at(secs)).as_deref(), Some(shown));
        }
        assert_eq!(age("1970-01-01T00:01:00Z", at(0)).as_deref(), Some("0s"));
        assert_eq!(age("soon", at(0)), None);
    }

    #[test]
    fn columns_align_and_empty_values_are_dashes() {
        let view = |name: &str, state: &str, fault: &str| RunnerView {
            instance: ProviderInstance {
                provider_id: name.into(),
                name: name.into(),
                os_type: String::new(),
                os_arch: String::new(),
                addresses: vec![],
                status: InstanceStatus::Running,
                provider_fault: None,
            },
            pool: "p1".into(),
            site: if state.is_empty() {
                String::new()
            } else {
                "TelekomOP/Munich".into()
            },
            state: state.into(),
            created_at: if state.is_empty() {
                String::new()
            } else {
                "1970-01-01T00:00:00Z".into()
            },
            fault: fault.into(),
        };
        let table = render(
            &[
                view("garm-a", "Ready", ""),
                view("garm-long-name", "", ""),
                view("garm-b", "CreateError", "CreateError: pull\nfailed"),
            ],
            at(300),
        );
        assert_eq!(
            table,
            "NAME            POOL  SITE              STATE        AGE  FAULT\n\
             garm-a          p1    TelekomOP/Munich  Ready        5m   -\n\
             garm-long-name  p1    -                 -            -    -\n\
             garm-b          p1    TelekomOP/Munich  CreateError  5m   CreateError: pull\\nfailed\n"
        );
    }
}
