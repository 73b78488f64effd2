//! Decimal numbers in log lines: `ratio=0.390` (SPEC §12), `threshold=0.2`,
//! the judge's `p`/`margin`/`mean` (two decimals).
//!
//! Byte for byte what `format!("{x:.N}")` writes (exact decimal value of the
//! `f64`, ties to even), which a property test checks. Written here because
//! std's float formatting (Grisu with a Dragon4 fallback) is ≈ 17 KB of the
//! component, whose size goal was 300 KB (issue 6; 512 KiB since issue 22); nothing else in the guest
//! formats floats.

/// `x` with exactly `decimals` digits after the point (at most 3; more are
/// cut to 3), as `format!("{x:.decimals$}")` writes it: `-0.500`, `1.000`,
/// `NaN`, `inf`, `-inf`. Exact: `x` is the binary value m·2^e, and
/// m·10^d·2^e is rounded to an integer with ties to even.
pub fn fixed(x: f64, decimals: u32) -> String {
    debug_assert!(decimals <= 3, "fixed: at most 3 decimals");
    let d = decimals.min(3);
    if x.is_nan() {
        return "NaN".to_string();
    }
    let negative = x.is_sign_negative();
    if x.is_infinite() {
        return if negative { "-inf" } else { "inf" }.to_string();
    }
    // |x| = m · 2^e exactly.
    let bits = x.to_bits();
    let exp_bits = ((bits >> 52) & 0x7ff) as i32;
    let frac = bits & ((1u64 << 52) - 1);
    let (m, e) = if exp_bits == 0 { (frac, -1074) } else { (frac | (1u64 << 52), exp_bits - 1075) };
    // v = m · 10^d < 2^63.
    let v = u128::from(m) * 10u128.pow(d);
    let digits = if e >= 0 {
        shifted_left(v, e as u32)
    } else {
        let s = e.unsigned_abs();
        let n = if s >= 127 {
            // v / 2^s < 2^63 / 2^127: below one half, rounds to 0.
            0
        } else {
            let q = v >> s;
            let r = v & ((1u128 << s) - 1);
            let half = 1u128 << (s - 1);
            if r > half || (r == half && q % 2 == 1) {
                q + 1
            } else {
                q
            }
        };
        n.to_string()
    };
    let d = d as usize;
    let digits = if digits.len() <= d { format!("{}{digits}", "0".repeat(d + 1 - digits.len())) } else { digits };
    let (int, frac) = digits.split_at(digits.len() - d);
    let mut out = String::with_capacity(digits.len() + 2);
    if negative {
        out.push('-');
    }
    out.push_str(int);
    if d > 0 {
        out.push('.');
        out.push_str(frac);
    }
    out
}

/// The decimal digits of `v · 2^shift` (an integer), without leading zeros.
fn shifted_left(v: u128, shift: u32) -> String {
    if shift <= 64 {
        // v < 2^63: fits.
        return (v << shift).to_string();
    }
    // Past u128: decimal digits, least significant first, doubled `shift` times.
    let mut digits: Vec<u8> = v.to_string().bytes().rev().map(|b| b - b'0').collect();
    for _ in 0..shift {
        let mut carry = 0;
        for digit in digits.iter_mut() {
            let t = *digit * 2 + carry;
            *digit = t % 10;
            carry = t / 10;
        }
        if carry > 0 {
            digits.push(carry);
        }
    }
    digits.iter().rev().map(|&d| char::from(b'0' + d)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn same(x: f64) {
        for d in 0..=3u32 {
            assert_eq!(fixed(x, d), format!("{x:.*}", d as usize), "{x:e} with {d} decimals");
        }
    }

    #[test]
    fn writes_what_std_writes() {
        for x in [
            0.0, -0.0, 0.39, 0.3905, 0.0625, 0.125, 0.375, 2.5, 0.5, 1.5, -0.5, 0.0005, 0.00049999, 0.9995,
            0.1, 0.2, 0.3, 1.0, 10.0, 2.89, 0.995, 0.985, 1e-300, 5e-324, -1e-10, 123456.789, 1e15, 1e17, 1e19,
            9.007199254740993e15, 1.7976931348623157e308, f64::MIN_POSITIVE, f64::NAN, f64::INFINITY,
            f64::NEG_INFINITY,
        ] {
            same(x);
        }
    }

    #[test]
    fn every_tie_of_three_decimals() {
        // Every k/16 and k/2048 has an exact decimal tie somewhere.
        for k in -5000..5000 {
            same(f64::from(k) / 16.0);
            same(f64::from(k) / 2048.0);
        }
    }


    proptest! {
        #[test]
        fn any_f64_as_std(bits in any::<u64>()) {
            same(f64::from_bits(bits));
        }

        #[test]
        fn ratios_as_std(x in -2.0f64..2.0) {
            same(x);
        }
    }
}

/// A decimal number written by a person (`0.2`, `1_000` already stripped,
/// `2e3`) read through serde_json's number parser, which the component
/// already carries (std's `f64::from_str` would add its own tables).
/// None for anything that is not a finite JSON number.
pub fn parse(text: &str) -> Option<f64> {
    // Through `Value`: a typed `f64` decode would link serde's "invalid
    // type: floating point" message, and with it std's float formatting.
    match serde_json::from_str::<serde_json::Value>(text.trim()) {
        Ok(serde_json::Value::Number(n)) => n.as_f64().filter(|v| v.is_finite()),
        _ => None,
    }
}
