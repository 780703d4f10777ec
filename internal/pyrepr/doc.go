// Package pyrepr prints values the way CPython 3 does, so that Anvil's error
// texts and CLI output read byte for byte like Ironic's and
// python-ironicclient's: repr() and str() of None, bools, ints, floats, str,
// lists, tuples and dicts.
//
// Values are what encoding/json decodes (nil, bool, float64 or json.Number,
// string, []any, map[string]any) plus a few Go types callers hold directly
// (ints, []string, any map with string keys, any slice). The rules:
//
//   - str: single quotes unless the text holds a single quote and no double
//     quote; backslash, the quote, \t, \n and \r escaped; other characters
//     escaped as \xHH, \uHHHH or \UHHHHHHHH exactly when Python's
//     str.isprintable() is false for them (non-ASCII letters stay as they
//     are). A byte that is not valid UTF-8 prints as \ufffd.
//   - json.Number: what json.loads makes of the literal: an int when it has
//     no fraction or exponent ("1" → 1), a float otherwise ("1e3" → 1000.0).
//   - float64: JSON decoding into float64 loses the int/float distinction;
//     an integral value below 1e16 in magnitude prints as an int (JSON
//     numbers are ints far more often), anything else as Python's float
//     repr (shortest round-trip digits, "1e+16", "1e-05", "inf", "nan").
//   - map[string]any prints with sorted keys (Go maps have no order); Dict
//     keeps its own key order as Python dicts keep insertion order.
//   - Tuple prints with parentheses, a one-element tuple as "('a',)".
//
// AppendJSONString writes a str as Python's json.dumps does (ensure_ascii),
// for the API's bodies and the CLI's -f json output.
//
// The package has no state and no I/O; every function is safe for
// concurrent use.
package pyrepr
