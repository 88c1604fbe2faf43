//! The CLI's table of runners for a person, as `garm-cli runner list` shows GARM's: one row per
//! runner with its name, pool, site, Edge Connect state, age and fault in words. Scripts use
//! `--format json` instead, which prints what GARM gets.

use std::time::{SystemTime, UNIX_EPOCH};

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
        let mut line = String::new();
        for (i, (cell, width)) in cells.iter().zip(widths).enumerate() {
            line.push_str(cell);
            // The last column is not padded: no trailing blanks.
            if i + 1 < cells.len() {
                let pad = width - cell.chars().count() + 2;
                line.extend(std::iter::repeat_n(' ', pad));
            }
        }
        out.push_str(line.trim_end());
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
    [
        cell(&r.instance.name),
        cell(&r.pool),
        cell(&r.site),
        cell(&r.state),
        cell(&age),
        cell(&r.fault),
    ]
}

/// How long ago `created_at` (RFC 3339, as Edge Connect writes it) was, in the largest whole
/// unit as `kubectl get` prints it: `45s`, `12m`, `5h`, `3d`. `None` when the time cannot be
/// read; a time ahead of `now` (clocks apart) counts as `0s`.
fn age(created_at: &str, now: SystemTime) -> Option<String> {
    let created = unix_seconds(created_at)?;
    let now = i64::try_from(now.duration_since(UNIX_EPOCH).ok()?.as_secs()).ok()?;
    let secs = now.saturating_sub(created).max(0);
    Some(match secs {
        s if s < 120 => format!("{s}s"),
        s if s < 2 * 3600 => format!("{}m", s / 60),
        s if s < 2 * 86_400 => format!("{}h", s / 3600),
        s => format!("{}d", s / 86_400),
    })
}

/// Seconds since the Unix epoch of an RFC 3339 time (`2026-01-02T03:04:05.123Z`,
/// `…+01:00`); the fraction is dropped.
fn unix_seconds(text: &str) -> Option<i64> {
    let number = |s: &str| -> Option<i64> {
        s.bytes()
            .all(|b| b.is_ascii_digit())
            .then(|| s.parse().ok())
            .flatten()
    };
    let (date, time) = text.split_once(['T', 't', ' '])?;
    let mut ymd = date.splitn(3, '-');
    let (y, m, d) = (
        number(ymd.next()?)?,
        number(ymd.next()?)?,
        number(ymd.next()?)?,
    );
    if !(1..=12).contains(&m) || !(1..=31).contains(&d) {
        return None;
    }
    let clock_len = time.find(['Z', 'z', '+', '-', '.']).unwrap_or(time.len());
    let mut hms = time[..clock_len].splitn(3, ':');
    let (hh, mm, ss) = (
        number(hms.next()?)?,
        number(hms.next()?)?,
        number(hms.next()?)?,
    );
    let zone = time[clock_len..].trim_start_matches(|c: char| c == '.' || c.is_ascii_digit());
    let offset = match zone {
        "Z" | "z" => 0,
        z if z.len() == 6 && (z.starts_with('+') || z.starts_with('-')) => {
            let (oh, om) = z[1..].split_once(':')?;
            let minutes = number(oh)? * 60 + number(om)?;
            if z.starts_with('-') {
                -minutes * 60
            } else {
                minutes * 60
            }
        }
        _ => return None,
    };
    Some(days_from_civil(y, m, d) * 86_400 + hh * 3600 + mm * 60 + ss - offset)
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's `days_from_civil`).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::garm::{InstanceStatus, ProviderInstance};
    use std::time::Duration;

    fn at(secs: u64) -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(secs)
    }

    #[test]
    fn rfc3339_times_read_as_edge_connect_writes_them() {
        assert_eq!(unix_seconds("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(unix_seconds("2026-01-02T03:04:05Z"), Some(1_767_323_045));
        assert_eq!(
            unix_seconds("2026-01-02T03:04:05.123456789Z"),
            Some(1_767_323_045)
        );
        assert_eq!(
            unix_seconds("2026-01-02T04:04:05+01:00"),
            Some(1_767_323_045)
        );
        for bad in [
            "",
            "2026-01-02",
            "2026-13-02T00:00:00Z",
            "x-y-zTa:b:cZ",
            "2026-01-02T03:04:05",
        ] {
            assert_eq!(unix_seconds(bad), None, "{bad}");
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
                os_name: String::new(),
                os_version: String::new(),
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
