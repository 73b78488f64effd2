//! Days and `--since` for `toolprune stats`: local calendar days (the
//! `TZ` of the process, through the C library), unix seconds everywhere else.

use std::time::{SystemTime, UNIX_EPOCH};

/// Now, unix seconds.
pub fn now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

/// The local calendar day of a unix time: `YYYY-MM-DD`.
pub fn day(at: u64) -> String {
    let (y, m, d) = local_date(at);
    format!("{y:04}-{m:02}-{d:02}")
}

/// The UTC calendar day of a unix time: `YYYY-MM-DD`.
pub fn utc_day(at: u64) -> String {
    let (y, m, d) = utc_date(at);
    format!("{y:04}-{m:02}-{d:02}")
}

#[cfg(unix)]
fn local_date(at: u64) -> (i32, u32, u32) {
    extern "C" {
        // POSIX; the libc crate does not declare it.
        fn tzset();
    }
    // SAFETY: tzset reads TZ (no preconditions); POSIX does not promise
    // that localtime_r does.
    unsafe { tzset() };
    let t = libc::time_t::try_from(at).unwrap_or(libc::time_t::MAX);
    // SAFETY: an all-zero `tm` is a valid value; localtime_r writes into it
    // and only reads `t`; it is the reentrant form.
    let mut tm: libc::tm = unsafe { std::mem::zeroed() };
    if unsafe { libc::localtime_r(&t, &mut tm) }.is_null() {
        return utc_date(at);
    }
    (tm.tm_year + 1900, (tm.tm_mon + 1) as u32, tm.tm_mday as u32)
}

#[cfg(not(unix))]
fn local_date(at: u64) -> (i32, u32, u32) {
    utc_date(at)
}

/// The UTC date of a unix time (days from the civil calendar, Howard
/// Hinnant's algorithm).
fn utc_date(at: u64) -> (i32, u32, u32) {
    let z = (at / 86_400) as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = (yoe + era * 400 + i64::from(m <= 2)) as i32;
    (y, m, d)
}

/// The unix time of local midnight starting `YYYY-MM-DD`.
#[cfg(unix)]
fn local_midnight(y: i32, m: u32, d: u32) -> Option<u64> {
    // SAFETY: as in `local_date`; mktime reads and normalises `tm`.
    let mut tm: libc::tm = unsafe { std::mem::zeroed() };
    tm.tm_year = y - 1900;
    tm.tm_mon = m as i32 - 1;
    tm.tm_mday = d as i32;
    tm.tm_isdst = -1;
    let t = unsafe { libc::mktime(&mut tm) };
    u64::try_from(t).ok()
}

#[cfg(not(unix))]
fn local_midnight(y: i32, m: u32, d: u32) -> Option<u64> {
    let _ = (y, m, d);
    None
}

/// `--since`: a local date `YYYY-MM-DD` (from its midnight), `today`, or a
/// duration back from `now`: a number and `m`, `h`, `d` or `w` (`90m`,
/// `24h`, `7d`, `2w`). Errors: a one-line message naming the forms.
pub fn since(text: &str, now: u64) -> Result<u64, String> {
    let text = text.trim();
    let bad = || format!("--since {text:?}: expected a date (2026-05-01), `today`, or a duration such as 90m, 24h, 7d, 2w");
    if text == "today" {
        let (y, m, d) = local_date(now);
        return local_midnight(y, m, d).ok_or_else(bad);
    }
    if let Some((unit, number)) = text.char_indices().last().map(|(i, c)| (c, &text[..i])) {
        if let (Some(seconds), Ok(n)) = (
            match unit {
                'm' => Some(60),
                'h' => Some(3600),
                'd' => Some(86_400),
                'w' => Some(7 * 86_400),
                _ => None,
            },
            number.parse::<u64>(),
        ) {
            return Ok(now.saturating_sub(n.saturating_mul(seconds)));
        }
    }
    let parts: Vec<&str> = text.split('-').collect();
    if let [y, m, d] = parts[..] {
        if y.len() == 4 && m.len() == 2 && d.len() == 2 {
            if let (Ok(y), Ok(m), Ok(d)) = (y.parse::<i32>(), m.parse::<u32>(), d.parse::<u32>()) {
                if (1..=12).contains(&m) && (1..=31).contains(&d) && y >= 1970 {
                    return local_midnight(y, m, d).ok_or_else(bad);
                }
            }
        }
    }
    Err(bad())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utc_dates_follow_the_civil_calendar() {
        assert_eq!(utc_date(0), (1970, 1, 1));
        assert_eq!(utc_date(951_782_400), (2000, 2, 29));
        assert_eq!(utc_date(1_767_225_600), (2026, 1, 1));
        assert_eq!(utc_date(1_767_225_599), (2025, 12, 31));
    }

    #[test]
    fn durations_count_back_from_now() {
        let now = 1_767_312_000;
        assert_eq!(since("90m", now), Ok(now - 5400));
        assert_eq!(since("24h", now), Ok(now - 86_400));
        assert_eq!(since("7d", now), Ok(now - 7 * 86_400));
        assert_eq!(since("2w", now), Ok(now - 14 * 86_400));
        assert_eq!(since("99999999999w", now), Ok(0));
        for bad in ["", "7", "d", "7y", "-7d", "2026-13-01", "2026-1-01", "yesterday", "1969-12-31"] {
            let e = since(bad, now).unwrap_err();
            assert!(e.contains("expected a date"), "{bad}: {e}");
        }
    }

    #[test]
    fn dates_are_local_midnights_and_days_are_local_dates() {
        // Whatever TZ the test runs in, a date's midnight is that date's
        // first second and the second before it is the day before.
        let midnight = since("2026-05-01", 0).unwrap();
        assert_eq!(day(midnight), "2026-05-01");
        assert_eq!(day(midnight - 1), "2026-04-30");
        let today = since("today", now()).unwrap();
        assert_eq!(day(today), day(now()));
        assert!(today <= now() && now() - today < 25 * 3600);
    }
}
