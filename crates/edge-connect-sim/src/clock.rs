//! Time and identifier helpers: RFC3339Nano timestamps, Go-style durations, revisions and
//! ULID-like object ids. Hand-written because the simulator needs only these few formats.

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Serialize, Serializer};

/// A point in time as the MC emits it: RFC3339Nano in UTC, or `""` for the zero time.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Timestamp {
    secs: i64,
    nanos: u32,
}

impl Timestamp {
    /// The current wall-clock time.
    pub(crate) fn now() -> Self {
        let since = since_epoch();
        Timestamp {
            secs: i64::try_from(since.as_secs()).unwrap_or(i64::MAX),
            nanos: since.subsec_nanos(),
        }
    }

    /// True for the zero time, which Go prints as `""`.
    pub(crate) fn is_zero(&self) -> bool {
        self.secs == 0 && self.nanos == 0
    }

    /// RFC3339 with nanoseconds, trailing zeros of the fraction trimmed (Go's `RFC3339Nano`).
    pub(crate) fn rfc3339(&self) -> String {
        let days = self.secs.div_euclid(86_400);
        let rem = self.secs.rem_euclid(86_400);
        let (y, m, d) = civil_from_days(days);
        let (hh, mm, ss) = (rem / 3600, (rem % 3600) / 60, rem % 60);
        let mut out = format!("{y:04}-{m:02}-{d:02}T{hh:02}:{mm:02}:{ss:02}");
        if self.nanos != 0 {
            let frac = format!("{:09}", self.nanos);
            out.push('.');
            out.push_str(frac.trim_end_matches('0'));
        }
        out.push('Z');
        out
    }
}

impl Serialize for Timestamp {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if self.is_zero() {
            s.serialize_str("")
        } else {
            s.serialize_str(&self.rfc3339())
        }
    }
}

/// Days since 1970-01-01 to (year, month, day), proleptic Gregorian (H. Hinnant's algorithm).
pub fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = if z >= 0 { z } else { z - 146_096 } / 146_097;
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m as u32, d as u32)
}

/// The time since the Unix epoch (zero for a clock set before it).
fn since_epoch() -> Duration {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or(Duration::ZERO)
}

/// Seconds since the Unix epoch, as a float (JWT checks need sub-second precision).
pub(crate) fn unix_now_f64() -> f64 {
    since_epoch().as_secs_f64()
}

/// Whole seconds formatted like Go's `time.Duration.String()` (`0s`, `5s`, `1m5s`, `1h2m3s`).
pub(crate) fn go_duration_secs(secs: u64) -> String {
    let (h, m, s) = (secs / 3600, (secs % 3600) / 60, secs % 60);
    if h > 0 {
        format!("{h}h{m}m{s}s")
    } else if m > 0 {
        format!("{m}m{s}s")
    } else {
        format!("{s}s")
    }
}

/// A small, fast, non-cryptographic random source (SplitMix64) seeded from the process'
/// hash seed and the clock; enough for ids and the simulator's JWT key.
pub(crate) struct Rng {
    state: AtomicU64,
}

impl Rng {
    /// A generator with a fresh, unpredictable-enough seed.
    pub(crate) fn new() -> Self {
        let mut h = RandomState::new().build_hasher();
        h.write_u128(since_epoch().as_nanos());
        h.write_u32(std::process::id());
        Rng {
            state: AtomicU64::new(h.finish()),
        }
    }

    /// The next 64 random bits.
    pub(crate) fn next_u64(&self) -> u64 {
        let mut z = self
            .state
            .fetch_add(0x9E37_79B9_7F4A_7C15, Ordering::Relaxed)
            .wrapping_add(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A ULID-shaped id (26 Crockford base32 characters: 48 bits of milliseconds, 80 random).
    pub(crate) fn ulid(&self) -> String {
        const ALPHABET: &[u8; 32] = b"0123456789ABCDEFGHJKMNPQRSTVWXYZ";
        let millis = since_epoch().as_millis() & ((1u128 << 48) - 1);
        let random = (u128::from(self.next_u64()) << 16 | u128::from(self.next_u64() & 0xFFFF))
            & ((1u128 << 80) - 1);
        let mut value = millis << 80 | random;
        let mut out = [b'0'; 26];
        for slot in out.iter_mut().rev() {
            *slot = ALPHABET[(value & 31) as usize];
            value >>= 5;
        }
        out.iter().map(|&b| b as char).collect()
    }

    /// `n` lower-case alphanumeric characters, for pod-name style suffixes.
    pub(crate) fn alnum(&self, n: usize) -> String {
        const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
        (0..n)
            .map(|_| ALPHABET[(self.next_u64() % ALPHABET.len() as u64) as usize] as char)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_rfc3339_nano_like_go() {
        let t = Timestamp {
            secs: 1_715_677_951,
            nanos: 482_113_000,
        };
        assert_eq!(t.rfc3339(), "2024-05-14T09:12:31.482113Z");
        let whole = Timestamp {
            secs: 951_782_400,
            nanos: 0,
        };
        assert_eq!(whole.rfc3339(), "2000-02-29T00:00:00Z");
        assert_eq!(
            serde_json::to_string(&Timestamp::default()).ok(),
            Some("\"\"".into())
        );
    }

    #[test]
    fn formats_go_durations() {
        assert_eq!(go_duration_secs(0), "0s");
        assert_eq!(go_duration_secs(65), "1m5s");
        assert_eq!(go_duration_secs(3723), "1h2m3s");
    }

    #[test]
    fn ulids_are_26_chars_and_distinct() {
        let rng = Rng::new();
        let (a, b) = (rng.ulid(), rng.ulid());
        assert_eq!(a.len(), 26);
        assert_ne!(a, b);
    }
}
