package pyrepr

import (
	"encoding/json"
	"math"
	"math/big"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

const hexDigits = "0123456789abcdef"

// Quote is Python's repr() of a str.
func Quote(s string) string {
	var b strings.Builder
	b.Grow(len(s) + 2)
	writeQuoted(&b, s)
	return b.String()
}

// writeQuoted follows CPython's unicode_repr.
func writeQuoted(b *strings.Builder, s string) {
	q := byte('\'')
	if strings.IndexByte(s, '\'') >= 0 && strings.IndexByte(s, '"') < 0 {
		q = '"'
	}
	b.WriteByte(q)
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			i++
			switch {
			case c == q || c == '\\':
				b.WriteByte('\\')
				b.WriteByte(c)
			case c == '\t':
				b.WriteString(`\t`)
			case c == '\n':
				b.WriteString(`\n`)
			case c == '\r':
				b.WriteString(`\r`)
			case c < ' ' || c == 0x7f:
				writeHex(b, `\x`, rune(c), 2)
			default:
				b.WriteByte(c)
			}
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		switch {
		case r == utf8.RuneError && size == 1:
			b.WriteString(`\ufffd`)
		case unicode.IsPrint(r):
			// Go's IsPrint (letters, marks, numbers, punctuation, symbols)
			// is Python's isprintable() for everything above ASCII.
			b.WriteRune(r)
		case r <= 0xff:
			writeHex(b, `\x`, r, 2)
		case r <= 0xffff:
			writeHex(b, `\u`, r, 4)
		default:
			writeHex(b, `\U`, r, 8)
		}
	}
	b.WriteByte(q)
}

func writeHex(b *strings.Builder, prefix string, r rune, digits int) {
	b.WriteString(prefix)
	for shift := 4 * (digits - 1); shift >= 0; shift -= 4 {
		b.WriteByte(hexDigits[(r>>shift)&0xF])
	}
}

// Number is Python's repr() of what json.loads makes of the JSON number
// literal n: an int when it has no fraction or exponent, a float otherwise.
func Number(n json.Number) string {
	s := n.String()
	if !strings.ContainsAny(s, ".eE") {
		if i, ok := new(big.Int).SetString(s, 10); ok {
			return i.String() // "-0" is 0
		}
		return s
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil && !math.IsInf(f, 0) {
		return s
	}
	return Float(f)
}

// decodedFloat prints a float64 that came out of JSON decoding: integral
// values below 1e16 in magnitude as ints, others as floats.
func decodedFloat(f float64) string {
	if f == math.Trunc(f) && math.Abs(f) < 1e16 {
		return strconv.FormatInt(int64(f), 10)
	}
	return Float(f)
}

// Float is Python's repr() of a float: the shortest digits that read back
// to f, positional between 1e-4 and 1e16 (with ".0" when integral),
// scientific with a signed two-digit-minimum exponent outside.
func Float(f float64) string {
	switch {
	case math.IsNaN(f):
		return "nan"
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	}
	// 'e' with precision -1 gives the shortest round-trip digits: d.ddde±XX.
	e := strconv.FormatFloat(f, 'e', -1, 64)
	sign := ""
	if e[0] == '-' {
		sign, e = "-", e[1:]
	}
	mant, expText, _ := strings.Cut(e, "e")
	exp, _ := strconv.Atoi(expText)
	digits := strings.Replace(mant, ".", "", 1)
	if exp < -4 || exp >= 16 {
		m := digits[:1]
		if len(digits) > 1 {
			m += "." + digits[1:]
		}
		es := "+"
		if exp < 0 {
			es, exp = "-", -exp
		}
		x := strconv.Itoa(exp)
		if len(x) < 2 {
			x = "0" + x
		}
		return sign + m + "e" + es + x
	}
	point := exp + 1 // digits before the decimal point
	switch {
	case point <= 0:
		return sign + "0." + strings.Repeat("0", -point) + digits
	case point >= len(digits):
		return sign + digits + strings.Repeat("0", point-len(digits)) + ".0"
	default:
		return sign + digits[:point] + "." + digits[point:]
	}
}

// BoolFromString is oslo.utils' strutils.bool_from_string(strict=True):
// the words it reads as true or false, any case, surrounding space
// ignored; ok is false for anything else.
func BoolFromString(s string) (b, ok bool) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "1", "t", "true", "on", "y", "yes":
		return true, true
	case "0", "f", "false", "off", "n", "no":
		return false, true
	}
	return false, false
}
