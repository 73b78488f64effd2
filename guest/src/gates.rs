//! SPEC §2: the cheap gates — when pruning is not even attempted (nothing
//! sent; no log line, but for the repeat gate, which stats count). The shape
//! gate (`structured`) and the basis gate (`no_basis`) follow in the `prune`
//! module (which uses this one), since they log. [`call_key`]: what makes two calls "the
//! same tool with the same arguments".

use crate::types::Gate;
use crate::limits::MIN_CHARS;

/// The facts a host passes about one tool result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Facts {
    /// Pruning is on and a scorer is configured (default off).
    pub enabled: bool,
    /// The tool call succeeded; error texts are never pruned.
    pub succeeded: bool,
    /// The host declared the tool prunable (default not).
    pub prunable: bool,
    /// Characters of the raw result.
    pub raw_chars: usize,
    /// The same tool was called with the same arguments earlier in this
    /// conversation, and that result was pruned ([`call_key`]).
    pub repeated: bool,
}

/// The first cheap gate that stops the call, in the order enabled,
/// succeeded, prunable, at least 4,000 characters (not bytes), not a
/// repeat; none when every gate passes.
pub fn stopped_by(f: Facts) -> Option<Gate> {
    if !f.enabled {
        Some(Gate::Disabled)
    } else if !f.succeeded {
        Some(Gate::ToolFailed)
    } else if !f.prunable {
        Some(Gate::NotPrunable)
    } else if f.raw_chars < MIN_CHARS {
        Some(Gate::TooShort)
    } else if f.repeated {
        Some(Gate::Repeated)
    } else {
        None
    }
}

/// The key of one call for the repeat gate (SPEC §2): a digest (SHA-256,
/// first 16 bytes, hex) of the tool's name and its arguments, the arguments
/// taken as JSON with object keys sorted and no spaces (so `{"a":1, "b":2}`
/// and `{"b": 2, "a": 1}` are one call) and every number taken as the
/// double it is to JavaScript (so `1.0` and `1` are one call: Python's
/// `json.dumps` writes `1.0` where Node's `JSON.stringify` writes `1`, and
/// an integer beyond 2^53 is rounded as Node's `JSON.parse` rounds it); a
/// text that is not JSON is taken as it is. A digest, never the arguments: it is stored and compared, never
/// read back.
pub fn call_key(tool: &str, arguments: &str) -> String {
    use sha2::{Digest, Sha256};
    let canonical = match serde_json::from_str::<serde_json::Value>(arguments) {
        Ok(value) => canonical_json(&value),
        Err(_) => arguments.to_string(),
    };
    let mut hash = Sha256::new();
    hash.update(tool.as_bytes());
    hash.update([0u8]);
    hash.update(canonical.as_bytes());
    hash.finalize()[..16].iter().map(|b| format!("{b:02x}")).collect()
}

/// `value` as compact JSON with every object's keys in sorted order and
/// every number written from its double (`1` and `1.0` alike).
fn canonical_json(value: &serde_json::Value) -> String {
    use serde_json::Value;
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            let fields: Vec<String> = keys
                .into_iter()
                .map(|k| format!("{}:{}", Value::String(k.clone()), canonical_json(&map[k])))
                .collect();
            format!("{{{}}}", fields.join(","))
        }
        Value::Array(items) => format!("[{}]", items.iter().map(canonical_json).collect::<Vec<_>>().join(",")),
        // Every number as the double it is to JavaScript (1, 1.0 and 1e0 alike; an integer
        // beyond 2^53 rounded as JSON.parse rounds it; -0 is 0), written by one rule.
        Value::Number(n) => match n.as_f64() {
            Some(f) if f == 0.0 => "0".to_string(),
            Some(f) => serde_json::Number::from_f64(f).map_or_else(|| n.to_string(), |d| d.to_string()),
            None => n.to_string(),
        },
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const OPEN: Facts = Facts { enabled: true, succeeded: true, prunable: true, raw_chars: 4_000, repeated: false };

    #[test]
    fn a_repeat_is_stopped_only_after_the_other_cheap_gates() {
        assert_eq!(stopped_by(Facts { repeated: true, ..OPEN }), Some(Gate::Repeated));
        assert_eq!(stopped_by(Facts { repeated: true, raw_chars: 10, ..OPEN }), Some(Gate::TooShort));
        assert_eq!(stopped_by(Facts { repeated: true, prunable: false, ..OPEN }), Some(Gate::NotPrunable));
    }

    #[test]
    fn the_same_arguments_in_another_order_or_spacing_are_the_same_call() {
        let a = call_key("fetch", r#"{"url": "https://example.org/a", "max_length": 5000}"#);
        assert_eq!(a, call_key("fetch", r#"{"max_length":5000,"url":"https://example.org/a"}"#));
        assert_eq!(a.len(), 32);
        assert!(a.bytes().all(|b| b.is_ascii_hexdigit()));
        assert_ne!(a, call_key("fetch", r#"{"url": "https://example.org/b", "max_length": 5000}"#), "other arguments");
        assert_ne!(a, call_key("fetch2", r#"{"url": "https://example.org/a", "max_length": 5000}"#), "another tool");
        assert_ne!(call_key("ab", "c"), call_key("a", "bc"), "the name and the arguments do not run together");
        assert_eq!(call_key("t", "not json {"), call_key("t", "not json {"));
        assert_ne!(call_key("t", r#"{"a":[1,2]}"#), call_key("t", r#"{"a":[2,1]}"#), "array order matters");
    }

    #[test]
    fn a_whole_number_written_with_a_fraction_is_the_same_call_as_the_integer() {
        // Python's json.dumps writes 1.0 where Node's JSON.stringify writes 1: one call in every host.
        let one = call_key("fetch", r#"{"max_length": 5000, "page": [1, -2]}"#);
        assert_eq!(one, call_key("fetch", r#"{"max_length": 5000.0, "page": [1.0, -2.0]}"#));
        assert_eq!(one, call_key("fetch", r#"{"max_length": 5e3, "page": [1, -2]}"#));
        assert_ne!(one, call_key("fetch", r#"{"max_length": 5000.5, "page": [1, -2]}"#), "a fraction is another number");
        assert_ne!(call_key("t", "[0.5]"), call_key("t", "[0]"));
        assert_ne!(call_key("t", "[1e300]"), call_key("t", "[1e301]"), "large doubles stay apart");
        assert_ne!(call_key("t", "[1e300]"), call_key("t", "[1]"));
        assert_eq!(call_key("t", "[-0.0]"), call_key("t", "[0]"), "minus zero is zero, as in JavaScript");
        assert_ne!(call_key("t", "[-1]"), call_key("t", "[1]"));
        // 2^53 + 1 is 2^53 to JavaScript (Python keeps the int exact): one call.
        assert_eq!(call_key("t", "[9007199254740993]"), call_key("t", "[9007199254740992]"));
        assert_ne!(call_key("t", "[9007199254740994]"), call_key("t", "[9007199254740992]"));
        assert_eq!(call_key("t", "[-9007199254740993]"), call_key("t", "[-9007199254740992.0]"));
    }
    #[test]
    fn every_cheap_gate_stops_the_call_and_is_named() {
        assert_eq!(stopped_by(OPEN), None);
        assert_eq!(stopped_by(Facts { enabled: false, ..OPEN }), Some(Gate::Disabled));
        assert_eq!(stopped_by(Facts { succeeded: false, ..OPEN }), Some(Gate::ToolFailed));
        assert_eq!(stopped_by(Facts { prunable: false, ..OPEN }), Some(Gate::NotPrunable));
        assert_eq!(stopped_by(Facts { raw_chars: 3_999, ..OPEN }), Some(Gate::TooShort));
        assert_eq!(stopped_by(Facts { enabled: false, succeeded: false, ..OPEN }), Some(Gate::Disabled));
    }
}
